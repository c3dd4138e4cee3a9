// The ingest domain owns durable alert ingest: a tenant adapter's batches of Wazuh alerts become
// events (idempotent per alert), grouped into investigations, with the adapter's checkpoint.
import { randomUUID } from 'node:crypto';
import { MAX_ALERT_BYTES } from '../../../contracts/internal.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import { findHeartbeat } from '../adapter/adapter-repository.ts';
import { AdapterTenantGoneError } from '../adapter/adapter-types.ts';
import { appendStreamStarts, type StreamStart } from '../events/event-repository.ts';
import { enqueueJobs } from '../jobs/job-repository.ts';
import { findTenant } from '../tenants/tenant-repository.ts';
import { refuseIfSuspended } from '../tenants/tenant-suspension.ts';
import { alertStreamId, parseAlertTimestamp, type Severity, severityOf } from './alert-identity.ts';
import {
  existingStreams,
  findCheckpoint,
  lockTenantAppends,
  openGroups,
  saveCheckpoint,
  saveGroups,
} from './ingest-repository.ts';
import {
  type AdapterActivity,
  type AlertBatch,
  type AlertGroup,
  type AlertProblem,
  type CheckpointView,
  GROUP_WINDOW_MS,
  INGEST_ACTOR,
  type IngestOutcome,
  IngestRateLimitedError,
  InvalidAlertsError,
  MAX_TITLE_CHARS,
  WAZUH,
  type WazuhAlert,
} from './ingest-types.ts';
import type { IngestRateLimiter } from './rate-limit.ts';

export interface IngestServiceDeps {
  db: Pick<AppDatabase, 'withTenant'>;
  limiter: IngestRateLimiter;
  /** How long a new investigation gathers alerts before its triage job runs (SVC_TRIAGE_DELAY). */
  triageDelayMs?: number;
  now?: () => Date;
}

/** One alert of a batch, checked and measured once. */
interface ReadAlert {
  alert: WazuhAlert;
  /** The alert exactly as it is stored (JSON), serialized once for the size rule and the insert. */
  json: string;
  at: number;
  streamId: string;
  severity: Severity;
}

export function createIngestService(deps: IngestServiceDeps) {
  const triageAt = () =>
    new Date((deps.now?.() ?? new Date()).getTime() + (deps.triageDelayMs ?? 10_000));
  return {
    /**
     * Stores a batch: every alert not stored yet becomes one `alert.received` event, each
     * group it opens one `investigation.opened` event before it, and the checkpoint moves,
     * all in one transaction under the tenant's append lock. Refused whole (nothing written)
     * when a rule is broken (InvalidAlertsError), the tenant's bucket is short
     * (IngestRateLimitedError) or the tenant is gone or soft-deleted (AdapterTenantGoneError).
     */
    async ingest(tenantId: string, batch: AlertBatch): Promise<IngestOutcome> {
      const alerts = readAlerts(batch.alerts);
      const taken = deps.limiter.take(tenantId, alerts.length);
      if (!taken.ok) throw new IngestRateLimitedError(taken.retryAfterSeconds);
      try {
        const outcome = await deps.db.withTenant(tenantId, (tx) =>
          storeBatch(tx, tenantId, alerts, batch.checkpoint, triageAt()),
        );
        if (!outcome) throw new AdapterTenantGoneError(tenantId);
        return outcome;
      } catch (error) {
        // Nothing was stored: the tokens were not spent.
        deps.limiter.refund(tenantId, alerts.length);
        throw error;
      }
    },

    /** The checkpoint the adapter resumes from (null before its first batch). */
    async readCheckpoint(tenantId: string): Promise<CheckpointView> {
      const view = await deps.db.withTenant(tenantId, async (tx) => {
        if (!(await isLive(tx, tenantId))) return undefined;
        const stored = await findCheckpoint(tx);
        return { checkpoint: stored?.position ?? null, alertsTotal: stored?.alertsTotal ?? 0 };
      });
      if (!view) throw new AdapterTenantGoneError(tenantId);
      return view;
    },

    /**
     * What an operator watches of a tenant's adapter: its last heartbeat (version, status map)
     * and what it has delivered. Undefined until the adapter is first heard from.
     */
    activity(tenantId: string): Promise<AdapterActivity | undefined> {
      return deps.db.withTenant(tenantId, async (tx) => {
        const beat = await findHeartbeat(tx);
        if (!beat) return undefined;
        const stored = await findCheckpoint(tx);
        return {
          version: beat.adapter_version,
          firstSeenAt: beat.first_seen_at,
          lastSeenAt: beat.last_seen_at,
          status: beat.status,
          alertsTotal: stored?.alertsTotal ?? 0,
          checkpointAt: stored?.updatedAt ?? null,
        };
      });
    },
  };
}

export type IngestService = ReturnType<typeof createIngestService>;

/**
 * A soft-deleted tenant's adapter should no longer exist; its leftover token stores nothing.
 * A suspended tenant's is refused outright (TenantSuspendedError, 403 `tenant_suspended`).
 */
async function isLive(tx: TenantTx, tenantId: string): Promise<boolean> {
  const tenant = await findTenant(tx, tenantId);
  refuseIfSuspended(tenantId, tenant?.state);
  return tenant !== undefined && tenant.deleted_at === null;
}

/** The rules past the contract's schema, for every alert; all problems at once. */
function readAlerts(alerts: WazuhAlert[]): ReadAlert[] {
  const problems: AlertProblem[] = [];
  const read = alerts.map((alert, i) => {
    const json = JSON.stringify(alert);
    if (Buffer.byteLength(json, 'utf8') > MAX_ALERT_BYTES)
      problems.push({ path: `/alerts/${i}`, message: `must be at most ${MAX_ALERT_BYTES} bytes` });
    const at = parseAlertTimestamp(alert.timestamp);
    if (at === undefined)
      problems.push({
        path: `/alerts/${i}/timestamp`,
        message: 'must be a real date and time between 1970 and 9999',
      });
    return {
      alert,
      json,
      at: at ?? 0,
      streamId: alertStreamId(alert.id),
      severity: severityOf(alert.rule.level),
    };
  });
  if (problems.length > 0) throw new InvalidAlertsError(problems);
  return read;
}

/** Undefined when the tenant is gone or soft-deleted (nothing written). */
async function storeBatch(
  tx: TenantTx,
  tenantId: string,
  alerts: ReadAlert[],
  checkpoint: AlertBatch['checkpoint'],
  triageAt: Date,
): Promise<IngestOutcome | undefined> {
  await lockTenantAppends(tx);
  if (!(await isLive(tx, tenantId))) return undefined;
  const stored = await existingStreams(
    tx,
    alerts.map((a) => a.streamId),
  );
  const fresh = firstOfEach(alerts).filter((a) => !stored.has(a.streamId));
  const plan = planGroups(fresh, await openGroups(tx, distinctKeys(fresh)));
  const written = await appendStreamStarts(tx, tenantId, INGEST_ACTOR, plan.events);
  const accepted = fresh.filter((a) => written.has(a.streamId)).length;
  // Each investigation this batch opened gets its triage job, committed with its opening.
  await enqueueJobs(
    tx,
    plan.events
      .filter((e) => e.type === 'investigation.opened' && written.has(e.streamId))
      .map((e) => ({
        tenantId,
        jobType: 'triage',
        input: { investigation_id: e.streamId },
        jobKey: `triage:${e.streamId}`,
        runAt: triageAt,
      })),
  );
  await saveGroups(tx, tenantId, plan.groups);
  const saved = await saveCheckpoint(tx, tenantId, checkpoint, accepted);
  return {
    accepted,
    duplicates: alerts.length - accepted,
    checkpoint: saved.position,
    opened: plan.opened,
  };
}

/** Each source id once, at its first place in the batch. */
function firstOfEach(alerts: ReadAlert[]): ReadAlert[] {
  const seen = new Set<string>();
  return alerts.filter((a) => {
    if (seen.has(a.streamId)) return false;
    seen.add(a.streamId);
    return true;
  });
}

function keyOf(ruleId: string, agentId: string): string {
  return JSON.stringify([ruleId, agentId]);
}

function distinctKeys(alerts: ReadAlert[]): { ruleId: string; agentId: string }[] {
  const keys = new Map<string, { ruleId: string; agentId: string }>();
  for (const { alert } of alerts) {
    keys.set(keyOf(alert.rule.id, alert.agent.id), {
      ruleId: alert.rule.id,
      agentId: alert.agent.id,
    });
  }
  return [...keys.values()];
}

/** At most 500 characters, cut between code points (never half a surrogate pair). */
function titleOf(alert: WazuhAlert): string {
  const description = alert.rule.description.trim();
  if (description === '') return `Wazuh rule ${alert.rule.id}`;
  const chars = Array.from(description);
  return chars.length <= MAX_TITLE_CHARS ? description : chars.slice(0, MAX_TITLE_CHARS).join('');
}

/**
 * The grouping rule, in batch order: an alert joins the open group of its (rule.id, agent.id)
 * when its timestamp is at most 30 minutes after the group's last alert (an earlier one, out
 * of order, joins too); otherwise it opens a new investigation, which closes the previous
 * group of that pair. Returns the events in append order (an `investigation.opened` before its
 * first `alert.received`) and every group's new state.
 */
function planGroups(
  alerts: ReadAlert[],
  open: AlertGroup[],
): { events: StreamStart[]; groups: AlertGroup[]; opened: number } {
  const current = new Map(open.map((g) => [keyOf(g.ruleId, g.agentId), g]));
  const touched = new Set<AlertGroup>();
  const events: StreamStart[] = [];
  let opened = 0;
  for (const read of alerts) {
    const { alert, at } = read;
    const key = keyOf(alert.rule.id, alert.agent.id);
    let group = current.get(key);
    if (group && at - group.lastAlertAt <= GROUP_WINDOW_MS) {
      group.lastAlertAt = Math.max(group.lastAlertAt, at);
      group.alertCount += 1;
    } else {
      if (group) {
        group.closed = true;
        touched.add(group);
      }
      group = {
        investigationId: randomUUID(),
        ruleId: alert.rule.id,
        agentId: alert.agent.id,
        lastAlertAt: at,
        alertCount: 1,
        closed: false,
      };
      current.set(key, group);
      events.push(investigationOpened(read, group.investigationId));
      opened += 1;
    }
    touched.add(group);
    events.push(alertReceived(read, group.investigationId));
  }
  return { events, groups: [...touched], opened };
}

function investigationOpened(read: ReadAlert, investigationId: string): StreamStart {
  const { alert } = read;
  return {
    streamType: 'investigation',
    streamId: investigationId,
    type: 'investigation.opened',
    occurredAtMs: read.at,
    payloadJson: JSON.stringify({
      investigation_id: investigationId,
      title: titleOf(alert),
      severity: read.severity,
      source: WAZUH,
      source_ref: `rule:${alert.rule.id}/agent:${alert.agent.id}`,
      rule_id: alert.rule.id,
      agent_id: alert.agent.id,
    }),
  };
}

function alertReceived(read: ReadAlert, investigationId: string): StreamStart {
  const head = JSON.stringify({
    source: WAZUH,
    source_id: read.alert.id,
    investigation_id: investigationId,
    severity: read.severity,
  });
  return {
    streamType: 'alert',
    streamId: read.streamId,
    type: 'alert.received',
    occurredAtMs: read.at,
    // The alert as received, serialized once (readAlerts measured this very text).
    payloadJson: `${head.slice(0, -1)},"alert":${read.json}}`,
  };
}
