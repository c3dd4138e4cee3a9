import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ; 100 on Linux everywhere that matters). */
const HZ = 100;

/** utime + stime (+ cutime + cstime: reaped children) of a process, seconds; 0 once gone. */
function cpuOf(pid: number, withChildren = false): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const at = (i: number) => Number(fields[i] ?? 0);
    // After "comm) ": state is field 0, so utime/stime/cutime/cstime are 11-14.
    return (at(11) + at(12) + (withChildren ? at(13) + at(14) : 0)) / HZ;
  } catch {
    return 0;
  }
}

function childrenOf(parent: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ');
      if (Number(fields?.[1]) === parent) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The postmaster's pid: the first line of postmaster.pid in the data directory. */
export function postmasterPid(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

export interface CpuSnapshot {
  bench: number;
  adapters: number;
  postgres: number;
  /** The OpenSearch JVM (every thread; 0 once it is gone). */
  indexer: number;
  /** The whole machine (every core, every process), from /proc/stat. */
  machine: number;
}

function machineSeconds(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/) ?? [];
  // user nice system idle iowait irq softirq steal: busy = user to softirq but idle and iowait
  // (steal is the hypervisor's, not work done here).
  const n = (i: number) => Number(cpu[i] ?? 0);
  return (n(1) + n(2) + n(3) + n(6) + n(7)) / HZ;
}

/**
 * CPU seconds spent so far by the bench process (svc: API, projector; and the indexer's writer
 * and the sampler), the adapters, PostgreSQL (the postmaster, its live backends and the reaped
 * ones) and the indexer's JVM, to attribute a phase's work by difference of two snapshots.
 */
export function cpuSnapshot(
  adapterPids: number[],
  postmaster: number | undefined,
  indexerPid?: number,
): CpuSnapshot {
  const postgres =
    postmaster === undefined
      ? 0
      : cpuOf(postmaster, true) + childrenOf(postmaster).reduce((a, pid) => a + cpuOf(pid), 0);
  return {
    bench: cpuOf(process.pid),
    adapters: adapterPids.reduce((a, pid) => a + cpuOf(pid), 0),
    postgres,
    indexer: indexerPid === undefined ? 0 : cpuOf(indexerPid),
    machine: machineSeconds(),
  };
}

export function cpuDelta(from: CpuSnapshot, to: CpuSnapshot): CpuSnapshot {
  return {
    bench: to.bench - from.bench,
    adapters: to.adapters - from.adapters,
    postgres: to.postgres - from.postgres,
    indexer: to.indexer - from.indexer,
    machine: to.machine - from.machine,
  };
}
