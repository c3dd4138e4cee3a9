// Moved to testcluster/stand-ins/indexer.ts: the demo (scripts/demo) runs it too.
export * from '../../testcluster/stand-ins/indexer.ts';
