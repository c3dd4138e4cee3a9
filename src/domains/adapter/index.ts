export { type AdapterToken, type BootstrapDeps, exchangeBootstrapCredential } from './bootstrap.ts';
export { type AdapterConfigView, readAdapterConfig } from './config.ts';
export {
  ADAPTER_BOOTSTRAP_SECRET,
  issueBootstrapCredential,
  verifyBootstrapCredential,
} from './credentials.ts';
export {
  type Heartbeat,
  type HeartbeatOutcome,
  recordHeartbeat,
  type TenantState,
} from './heartbeat.ts';
