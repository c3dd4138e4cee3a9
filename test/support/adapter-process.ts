// Moved to testcluster/kubelet/adapter-process.ts: the demo (scripts/demo) runs it too.
export * from '../../testcluster/kubelet/adapter-process.ts';
