import { setTimeout as sleep } from 'node:timers/promises';
import { fillPath } from '../../../contracts/index.ts';
import { msspContract } from '../../../contracts/mssp.ts';
import { durationMs } from '../../config/index.ts';
import { sseMessages } from './event-stream.ts';
import { getTenant } from './lookup.ts';
import { describe, firstLine, type LifecycleEntry, progress, type TenantJson } from './output.ts';
import { CliError, type Session } from './session.ts';

/** `--wait`: following a tenant's progress live until a goal is reached, fails or times out. */

const POLL_MS = 2_000;
const RECONNECT_MS = 1_000;

function lifecycleEntry(data: string): LifecycleEntry {
  const { payload } = JSON.parse(data) as {
    payload: Omit<LifecycleEntry, 'id'> & { lifecycle_id: string };
  };
  return { ...payload, id: payload.lifecycle_id };
}

/**
 * Follows the tenant's event stream until aborted, resuming with Last-Event-ID after a drop.
 * A 4xx ends it: the poll beside it reports the cause.
 */
async function streamLifecycle(
  s: Session,
  tenantId: string,
  signal: AbortSignal,
  onEntry: (e: LifecycleEntry) => void,
): Promise<void> {
  const url = `${s.baseUrl}${fillPath(msspContract.tenantEvents.path, { tenant_id: tenantId })}`;
  let lastId: string | undefined;
  while (!signal.aborted) {
    try {
      const headers = { accept: 'text/event-stream', cookie: s.cookie };
      const res = await fetch(url, {
        headers: lastId ? { ...headers, 'last-event-id': lastId } : headers,
        signal,
      });
      if (res.status >= 400 && res.status < 500) {
        await res.body?.cancel();
        return;
      }
      for await (const m of res.ok && res.body ? sseMessages(res.body) : []) {
        lastId = m.id ?? lastId;
        if (m.event?.startsWith('tenant.lifecycle.')) onEntry(lifecycleEntry(m.data));
      }
    } catch {
      // The stream dropped (or was aborted): reconnect below unless we are done.
    }
    await sleep(RECONNECT_MS, undefined, { signal }).catch(() => undefined);
  }
}

/** A wait of at most `ms` that `wake()` cuts short, remembered if no wait is running yet. */
function ticker() {
  let pending = false;
  let release: (() => void) | undefined;
  return {
    wait(ms: number): Promise<void> {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise((done) => {
        const timer = setTimeout(() => release?.(), ms);
        release = () => {
          clearTimeout(timer);
          release = undefined;
          done();
        };
      });
    },
    wake(): void {
      if (release) release();
      else pending = true;
    },
  };
}

/** Decides from a poll: a success line, undefined to keep waiting, or a thrown CliError. */
export type Goal = (tenant: TenantJson, fresh: LifecycleEntry[]) => string | undefined;

export interface WaitLimit {
  ms: number;
  text: string;
}

export const provisioned: Goal = (t) => {
  if (t.state === 'active') return `${t.slug} is active`;
  if (t.state === 'pending' && t.error_details) {
    const e = t.error_details;
    throw new CliError(
      1,
      `provisioning of ${t.slug} failed at step ${e.step}: ${e.message} (${e.code}); rolled back, the tenant stays pending: fix the cause, then run svc tenants retry ${t.slug}`,
    );
  }
  if (t.state === 'decommissioning' || t.state === 'soft-deleted') {
    throw new CliError(1, `${t.slug} is ${t.state}`);
  }
  return undefined;
};

export const upgraded: Goal = (t, fresh) => {
  if (t.upgrade_target !== null) return undefined;
  const last = fresh.findLast((e) => e.step === 'upgraded' || e.step === 'upgrade_failed');
  if (last?.step === 'upgrade_failed') {
    throw new CliError(
      1,
      `upgrade of ${t.slug} to ${last.details.to} failed: ${firstLine(last.details.error)}; it still runs ${t.chart_version} (upgrade_failed)`,
    );
  }
  return last ? `${t.slug} runs tenant package ${t.chart_version}` : undefined;
};

/** The orchestrator has scaled the suspended tenant's workloads to zero. */
export const dataPlaneSuspended: Goal = (t, fresh) => {
  if (fresh.some((e) => e.step === 'data_plane_suspended'))
    return `${t.slug} is suspended; its workloads are at zero replicas, its volumes kept`;
  if (t.state !== 'suspended')
    throw new CliError(1, `${t.slug} is ${t.state} before its workloads were scaled down`);
  return undefined;
};

/** The orchestrator has given the resumed tenant's workloads their replicas back. */
export const dataPlaneResumed: Goal = (t, fresh) => {
  if (fresh.some((e) => e.step === 'data_plane_resumed'))
    return `${t.slug} is active; its workloads have their replicas back`;
  if (t.state !== 'active')
    throw new CliError(1, `${t.slug} is ${t.state} before its workloads were restored`);
  return undefined;
};

/**
 * Prints lifecycle entries live from the event stream and polls the tenant every 2 s (the
 * source of truth, and the fallback when the stream is unavailable) until the goal decides.
 */
export async function follow(
  s: Session,
  tenantId: string,
  goal: Goal,
  limit: WaitLimit,
  baseline: ReadonlySet<string> = new Set(),
): Promise<void> {
  const seen = new Set(baseline);
  const show = (e: LifecycleEntry) => {
    if (!seen.has(e.id)) progress(describe(e));
    seen.add(e.id);
  };
  const tick = ticker();
  let live = false;
  const stop = new AbortController();
  const stream = streamLifecycle(s, tenantId, stop.signal, (e) => {
    if (live) show(e);
    tick.wake();
  });
  const deadline = Date.now() + limit.ms;
  try {
    for (;;) {
      const { tenant, lifecycle } = await getTenant(s, tenantId);
      for (const e of lifecycle) show(e);
      live = true;
      const done = goal(
        tenant,
        lifecycle.filter((e) => !baseline.has(e.id)),
      );
      if (done) return progress(`✓ ${done}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new CliError(
          124,
          `timed out after ${limit.text}; ${tenant.slug} is ${tenant.state} and svc keeps working on it (svc tenants get ${tenant.slug})`,
        );
      }
      await tick.wait(Math.min(POLL_MS, left));
    }
  } finally {
    stop.abort();
    await stream;
  }
}

export function waitLimit(text: string): WaitLimit {
  try {
    return { ms: durationMs(text), text };
  } catch {
    throw new CliError(2, `--timeout ${text}: expected a duration such as 90s, 30m or 2h`);
  }
}
