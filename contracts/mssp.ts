/** The MSSP family, split by resource under `mssp/` (one file per router in src/http/mssp/). */
export * from './mssp/index.ts';
