import type { TenantValues } from '../../contracts/tenant-values.ts';
import type { RolloutOutcome } from '../domains/provisioning/provisioning-types.ts';
import type { OrchestratorDeps } from './context.ts';
import { RELEASE_NAME } from './release.ts';

export type { RolloutOutcome };

const messageOf = (error: unknown) =>
  error instanceof Error ? error.message.slice(0, 2000) : String(error);

/**
 * The rollout an upgrade and a configuration change share (spec §3.1 last paragraph, §9.4
 * "Upgrade flow"): `helm upgrade` with the prepared chart and values, its rollout waited for
 * (helm's watcher, bounded by the readiness timeout); on failure the release is rolled back to
 * the revision that ran before. A failure while preparing (the values do not render, a Secret
 * cannot be written) has not touched the release, so nothing is rolled back.
 */
export async function rollOut(
  deps: Pick<OrchestratorDeps, 'helm' | 'timing'>,
  namespace: string,
  prepare: () => Promise<{ chart: { path: string }; values: TenantValues }>,
  signal: AbortSignal,
): Promise<RolloutOutcome> {
  const before = await deps.helm.status({ release: RELEASE_NAME, namespace });
  let prepared: Awaited<ReturnType<typeof prepare>>;
  try {
    prepared = await prepare();
  } catch (error) {
    signal.throwIfAborted();
    return { ok: false, error: messageOf(error), rolledBackTo: null };
  }
  try {
    await deps.helm.upgrade({
      release: RELEASE_NAME,
      namespace,
      chart: prepared.chart.path,
      values: prepared.values,
      timeoutMs: deps.timing.readinessTimeoutMs,
      wait: true,
    });
    return { ok: true };
  } catch (error) {
    signal.throwIfAborted();
    if (!before) return { ok: false, error: messageOf(error), rolledBackTo: null };
    await deps.helm.rollback({
      release: RELEASE_NAME,
      namespace,
      revision: before.revision,
      timeoutMs: deps.timing.readinessTimeoutMs,
      wait: true,
    });
    return { ok: false, error: messageOf(error), rolledBackTo: before.revision };
  }
}
