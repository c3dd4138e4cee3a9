// Moved to testcluster/stand-ins/loopback-tls.ts: the demo (scripts/demo) runs it too.
export * from '../../testcluster/stand-ins/loopback-tls.ts';
