// Moved to testcluster/kubelet/adapter-pod.ts: the demo (scripts/demo) runs it too.
export * from '../../testcluster/kubelet/adapter-pod.ts';
