// Moved to testcluster/system-chart.ts: the demo (scripts/demo) runs it too.
export * from '../../testcluster/system-chart.ts';
