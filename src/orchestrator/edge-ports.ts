import type { EdgePorts } from '../domains/provisioning/provisioning-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { StepFailure } from './step-failure.ts';

export function edgePorts(base: number, pair: number): EdgePorts {
  return { events: base + 2 * pair, enrollment: base + 2 * pair + 1 };
}

/** The last pair whose enrollment port is still a TCP port (≤ 65535) above `base`. */
export function maxEdgePair(base: number): number {
  return Math.floor((65_535 - base - 1) / 2);
}

const UNIQUE_VIOLATION = '23505';

/**
 * Lowest free pair. Two orchestrators racing for the same pair meet the UNIQUE constraint;
 * the loser tries the next one. A tenant that already holds a pair keeps it.
 */
export async function allocateEdgePorts(
  deps: Pick<OrchestratorDeps, 'provisioning' | 'edgePortBase'>,
  tenantId: string,
): Promise<EdgePorts> {
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      const pair = await deps.provisioning.allocateEdgePortPair(
        tenantId,
        maxEdgePair(deps.edgePortBase),
      );
      if (pair === undefined)
        throw new StepFailure(
          'edge_ports_allocated',
          'edge_ports_exhausted',
          'no free edge port pair',
        );
      return edgePorts(deps.edgePortBase, pair);
    } catch (error) {
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error;
    }
  }
  throw new StepFailure(
    'edge_ports_allocated',
    'edge_ports_contended',
    'could not allocate an edge port pair',
  );
}
