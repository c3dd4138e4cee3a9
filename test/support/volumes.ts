// Moved to testcluster/volumes.ts: the demo (scripts/demo) runs it too.
export * from '../../testcluster/volumes.ts';
