// Moved to testcluster/stand-ins/llm.ts: the demo (scripts/demo) runs it too.
export * from '../../testcluster/stand-ins/llm.ts';
