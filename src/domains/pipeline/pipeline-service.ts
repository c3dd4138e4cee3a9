// The pipeline domain owns what happens to an investigation after ingest opens it: triage
// (policy, then a model), enrichment (indicators, the tenant's analyzers), the decision, and
// acting on an approved review. Every step is an event on the investigation's stream.
import type { EventPayload, EventType, EventTypeOn } from '../../../contracts/events.ts';
import type { AppDatabase } from '../../db/pools.ts';
import type { TenantTx } from '../../db/tenant-context.ts';
import type { CortexClient } from '../../integrations/cortex/cortex-client.ts';
import { IntegrationError } from '../../integrations/integration-error.ts';
import { LlmError } from '../../integrations/llm/provider.ts';
import type { ObservableType, TheHiveClient } from '../../integrations/thehive/thehive-client.ts';
import { writeAudit } from '../audit/audit-repository.ts';
import { appendToStream, type StreamAppendInput } from '../events/event-repository.ts';
import { enqueueJobs } from '../jobs/job-repository.ts';
import { findPolicy } from '../llm/llm-repository.ts';
import type { CompletionAsk, LlmOutcome } from '../llm/llm-types.ts';
import {
  isSeverity,
  type Severity,
  VERDICTS,
  type Verdict,
} from '../projections/projection-types.ts';
import { extractIocs, type Ioc, publicIocs } from './iocs.ts';
import {
  findReview,
  insertReview,
  investigationProjected,
  lockInvestigation,
  readInvestigationAlerts,
  readInvestigationStream,
} from './pipeline-repository.ts';
import {
  type PipelineEvent,
  ProjectionLagError,
  type ProposedAction,
  type TriageResult,
} from './pipeline-types.ts';
import { applyPolicy, type PolicyAlert, type ResolvedPolicy, resolvePolicy } from './policy.ts';
import { buildTriagePrompt, parseTriageAnswer, TRIAGE_ANSWER_JSON_SCHEMA } from './prompt.ts';
import { InvalidRedactionPatternError, redact } from './redaction.ts';

/** The tenant's case and analysis components, resolved when a step needs them. */
export interface TenantComponents {
  /** Throws IntegrationError when the case component cannot be resolved. */
  cases(tenantId: string): Promise<TheHiveClient>;
  analysis(tenantId: string): Promise<CortexClient | { unavailable: string }>;
}

export interface PipelineServiceDeps {
  db: Pick<AppDatabase, 'withTenant'>;
  llm: { complete(tenantId: string, ask: CompletionAsk): Promise<LlmOutcome> };
  components: TenantComponents;
}

/** One job's view of itself: the tenant and actor come from its verified Worker token. */
export interface StepRun {
  tenantId: string;
  actorId: string;
  /** The job's last attempt: a failure now becomes a human's review, not another retry. */
  lastAttempt: boolean;
}

/** Alerts read for a prompt (it shows at most 40) and for indicators. */
const ALERTS_READ = 50;
/** Analyzer runs per investigation: indicators × allowed analyzers, first ones first. */
const MAX_ANALYZER_RUNS = 20;
const ANSWER_TOKENS = 1024;
const NO_ANALYZERS = 'no analyzers allowed by the triage policy';

const CORTEX_TYPE: Record<Ioc['type'], string> = {
  ip: 'ip',
  domain: 'domain',
  url: 'url',
  hash: 'hash',
  email: 'mail',
};
const CASE_SEVERITY: Record<Severity, 1 | 2 | 3 | 4> = {
  info: 1,
  low: 1,
  medium: 2,
  high: 3,
  critical: 4,
};

const isVerdict = (value: unknown): value is Verdict =>
  typeof value === 'string' && (VERDICTS as readonly string[]).includes(value);
const has = (stream: PipelineEvent[], type: EventType) => stream.some((e) => e.type === type);
const last = (stream: PipelineEvent[], type: EventType) => stream.findLast((e) => e.type === type);

/** A catalog payload without the `investigation_id` the append helper adds (per variant). */
type StepPayload<T extends EventType> =
  EventPayload<T> extends infer P
    ? P extends unknown
      ? Omit<P, 'investigation_id'>
      : never
    : never;
/** What a triage outcome records besides its result (contracts/events.ts). */
type TriageRecord = Omit<StepPayload<'triage.completed'>, keyof TriageResult>;
type AnalyzerRun = StepPayload<'analyzer.completed'>;
/** The outcomes of an approved review's action; one with its review id means it was acted on. */
const ACTED: readonly string[] = [
  'case.opened',
  'investigation.closed',
  'action.failed',
] satisfies EventType[];

interface Opened {
  title: string;
  severity: Severity;
}

function openedOf(stream: PipelineEvent[]): Opened | undefined {
  const opened = stream.find((e) => e.type === 'investigation.opened');
  if (!opened) return undefined;
  const { title, severity } = opened.payload;
  return {
    title: typeof title === 'string' && title !== '' ? title : 'Untitled',
    severity: isSeverity(severity) ? severity : 'info',
  };
}

function policyAlerts(alerts: unknown[]): PolicyAlert[] {
  return alerts.flatMap((a) => {
    const rule = (a as { rule?: { level?: unknown; groups?: unknown } } | null)?.rule;
    if (typeof rule?.level !== 'number') return [];
    const groups = Array.isArray(rule.groups)
      ? rule.groups.filter((g): g is string => typeof g === 'string')
      : [];
    return [{ rule: { level: rule.level, groups } }];
  });
}

export function createPipelineService(deps: PipelineServiceDeps) {
  const { db } = deps;

  async function append<T extends EventTypeOn<'investigation'>>(
    tx: TenantTx,
    run: StepRun,
    investigationId: string,
    type: T,
    payload: StepPayload<T>,
  ): Promise<void> {
    await appendToStream(tx, {
      tenantId: run.tenantId,
      streamType: 'investigation',
      streamId: investigationId,
      type,
      payload: { investigation_id: investigationId, ...payload },
      actor: run.actorId,
      // The compiler cannot relate a spread generic payload to the catalog's mapped type; the
      // signature above (type T, its payload) is what every call is checked against.
    } as StreamAppendInput<T>);
  }

  function next(tx: TenantTx, run: StepRun, jobType: string, investigationId: string) {
    return enqueueJobs(tx, [
      {
        tenantId: run.tenantId,
        jobType,
        input: { investigation_id: investigationId },
        jobKey: `${jobType}:${investigationId}`,
      },
    ]);
  }

  /** The model's triage: redacted prompt, cached and budgeted completion, validated answer. */
  async function askModel(
    run: StepRun,
    opened: Opened,
    alerts: unknown[],
    policy: ResolvedPolicy,
  ): Promise<{ result?: TriageResult; failure?: string; record: TriageRecord }> {
    let redacted: ReturnType<typeof redact>;
    try {
      redacted = redact([{ title: opened.title }, ...alerts], policy);
    } catch (error) {
      if (error instanceof InvalidRedactionPatternError)
        return { failure: 'redaction_policy_invalid', record: {} };
      throw error;
    }
    const [titleDoc, ...shown] = redacted.alerts as [{ title: string }, ...unknown[]];
    const prompt = buildTriagePrompt({
      title: titleDoc.title,
      severity: opened.severity,
      alerts: shown,
      iocs: extractIocs(shown),
    });
    const record: TriageRecord = {
      redaction: { fired: redacted.fired, placeholders: redacted.placeholders },
      prompt: {
        user: prompt.user,
        alerts_shown: prompt.alertsShown,
        alerts_omitted: prompt.alertsOmitted,
      },
    };
    const ask: CompletionAsk = {
      purpose: 'triage',
      system: prompt.system,
      user: prompt.user,
      json: { name: 'triage_answer', schema: TRIAGE_ANSWER_JSON_SCHEMA },
      maxTokens: ANSWER_TOKENS,
    };
    let reason = '';
    // A malformed answer is asked again once, saying what was wrong (a new prompt: the cache
    // keeps the malformed one under the first).
    for (const attempt of [1, 2]) {
      const user =
        attempt === 1
          ? ask.user
          : `${ask.user}\n\nYour previous answer was rejected (${reason}). Answer again with only the JSON object.`;
      let outcome: LlmOutcome;
      try {
        outcome = await deps.llm.complete(run.tenantId, { ...ask, user });
      } catch (error) {
        if (error instanceof LlmError) return { failure: `llm_${error.kind}`, record };
        throw error;
      }
      if (outcome.kind === 'over_budget') return { failure: 'llm_budget_exhausted', record };
      record.model = outcome.model;
      record.cached = outcome.cached;
      record.usage = outcome.usage;
      record.answer_attempts = attempt;
      const parsed = parseTriageAnswer(outcome.text);
      if (parsed.ok) return { result: { by: 'model', ...parsed.answer }, record };
      reason = parsed.reason;
    }
    return { failure: `malformed_answer: ${reason}`.slice(0, 500), record };
  }

  /**
   * The decision, in the caller's transaction with the investigation locked and its stream read.
   * False, with nothing written, when it would put a review in the queue before the projector
   * has folded the investigation (a review row references the projection): the caller retries.
   */
  async function decideIn(
    tx: TenantTx,
    run: StepRun,
    investigationId: string,
    stream: PipelineEvent[],
    resolved?: ResolvedPolicy,
  ): Promise<boolean> {
    const opened = openedOf(stream);
    if (!opened || has(stream, 'decision.made')) return true;
    const policy = resolved ?? resolvePolicy((await findPolicy(tx, run.tenantId))?.policy);
    const decision = decideFrom(stream, opened, policy);
    if (decision.kind === 'review' && !(await investigationProjected(tx, investigationId)))
      return false;
    await append(tx, run, investigationId, 'decision.made', {
      action: decision.kind,
      reason: decision.reason,
    });
    if (decision.kind === 'close') {
      await append(tx, run, investigationId, 'investigation.closed', {
        verdict: decision.verdict,
        reason: decision.reason,
        by: 'pipeline',
      });
      await audit(tx, run, 'investigation.close', investigationId, {
        verdict: decision.verdict,
        reason: decision.reason,
      });
      return true;
    }
    const review = await insertReview(tx, {
      tenantId: run.tenantId,
      investigationId,
      proposedAction: decision.proposed,
      actionParams: { verdict: decision.verdict },
      rationale: decision.reason,
      evidence: decision.evidence,
      risk: decision.risk,
      confidence: decision.confidence,
      requestedBy: run.actorId,
    });
    await append(tx, run, investigationId, 'review.requested', {
      review_id: review.id,
      proposed_action: decision.proposed,
      rationale: decision.reason,
    });
    await audit(tx, run, 'review.request', review.id, {
      investigation_id: investigationId,
      proposed_action: decision.proposed,
    });
    return true;
  }

  return {
    /** Step 1: the tenant's policy decides, or the model triages. Records triage.completed or triage.failed. */
    async triage(run: StepRun, investigationId: string): Promise<void> {
      const state = await db.withTenant(run.tenantId, async (tx) => {
        const stream = await readInvestigationStream(tx, investigationId);
        const opened = openedOf(stream);
        if (!opened) return undefined;
        if (has(stream, 'triage.completed') || has(stream, 'triage.failed')) {
          await next(tx, run, 'enrich', investigationId);
          return undefined;
        }
        if (!has(stream, 'triage.started'))
          await append(tx, run, investigationId, 'triage.started', { attempt: 1 });
        const alerts = await readInvestigationAlerts(tx, investigationId, ALERTS_READ);
        const policy = resolvePolicy((await findPolicy(tx, run.tenantId))?.policy);
        return { opened, alerts, policy };
      });
      if (!state) return;
      const { opened, alerts, policy } = state;
      const ruled = applyPolicy(policy, policyAlerts(alerts));
      let outcome: Awaited<ReturnType<typeof askModel>>;
      if (ruled.kind === 'auto_close') {
        outcome = {
          result: {
            by: 'policy',
            verdict: 'benign',
            severity: opened.severity,
            confidence: 1,
            rationale: ruled.reason,
            recommended_action: 'close',
          },
          record: {},
        };
      } else if (ruled.kind === 'escalate') {
        outcome = {
          result: {
            by: 'policy',
            verdict: 'inconclusive',
            severity: opened.severity,
            confidence: 1,
            rationale: ruled.reason,
            recommended_action: 'escalate',
          },
          record: { groups: ruled.groups },
        };
      } else {
        try {
          outcome = await askModel(run, opened, alerts, policy);
        } catch (error) {
          if (!run.lastAttempt) throw error;
          outcome = { failure: 'internal_error', record: {} };
        }
      }
      await db.withTenant(run.tenantId, async (tx) => {
        await lockInvestigation(tx, investigationId);
        const stream = await readInvestigationStream(tx, investigationId);
        if (!has(stream, 'triage.completed') && !has(stream, 'triage.failed')) {
          if (outcome.result)
            await append(tx, run, investigationId, 'triage.completed', {
              ...outcome.result,
              ...outcome.record,
            });
          else
            await append(tx, run, investigationId, 'triage.failed', {
              reason: outcome.failure ?? 'internal_error',
              ...outcome.record,
            });
        }
        if (policy.analyzers.length > 0) {
          await next(tx, run, 'enrich', investigationId);
          return;
        }
        // docs/pipeline.md "Inline steps": no analyzer may run, so enrichment has no outside
        // call to wait for, and it and the decision are written here, in this transaction.
        if (!has(stream, 'enrichment.completed'))
          await append(tx, run, investigationId, 'enrichment.completed', {
            iocs: extractIocs(alerts),
            results: [],
            note: NO_ANALYZERS,
          });
        const written = await readInvestigationStream(tx, investigationId);
        if (!(await decideIn(tx, run, investigationId, written, policy)))
          await next(tx, run, 'decide', investigationId);
      });
    },

    /** Step 2: indicators from the alerts, run through the tenant's allowed analyzers. */
    async enrich(run: StepRun, investigationId: string): Promise<void> {
      const state = await db.withTenant(run.tenantId, async (tx) => {
        const stream = await readInvestigationStream(tx, investigationId);
        if (!openedOf(stream)) return undefined;
        if (has(stream, 'enrichment.completed')) {
          await next(tx, run, 'decide', investigationId);
          return undefined;
        }
        const alerts = await readInvestigationAlerts(tx, investigationId, ALERTS_READ);
        const policy = resolvePolicy((await findPolicy(tx, run.tenantId))?.policy);
        return { iocs: extractIocs(alerts), analyzers: policy.analyzers };
      });
      if (!state) return;
      const candidates = publicIocs(state.iocs);
      const runs: AnalyzerRun[] = [];
      let note: string | undefined;
      if (state.analyzers.length === 0) note = NO_ANALYZERS;
      else if (candidates.length === 0) note = 'no public indicators';
      else {
        const client = await deps.components.analysis(run.tenantId).catch((error: unknown) => {
          if (error instanceof IntegrationError) return { unavailable: error.message };
          throw error;
        });
        if ('unavailable' in client) note = client.unavailable;
        else runs.push(...(await analyze(client, state.analyzers, candidates)));
      }
      await db.withTenant(run.tenantId, async (tx) => {
        await lockInvestigation(tx, investigationId);
        const stream = await readInvestigationStream(tx, investigationId);
        if (!has(stream, 'enrichment.completed')) {
          for (const result of runs) {
            await append(tx, run, investigationId, 'analyzer.completed', result);
          }
          await append(tx, run, investigationId, 'enrichment.completed', {
            iocs: state.iocs,
            results: runs.map(({ analyzer, observable, verdict, success }) => ({
              analyzer,
              observable,
              verdict,
              success,
            })),
            ...(note ? { note } : {}),
          });
        }
        await next(tx, run, 'decide', investigationId);
      });
    },

    /** Step 3: close on a confident benign answer; everything else goes to a human. */
    async decide(run: StepRun, investigationId: string): Promise<void> {
      await db.withTenant(run.tenantId, async (tx) => {
        await lockInvestigation(tx, investigationId);
        const stream = await readInvestigationStream(tx, investigationId);
        if (!(await decideIn(tx, run, investigationId, stream)))
          throw new ProjectionLagError(investigationId);
      });
    },

    /**
     * An approved review's action, once: a case opened in the tenant's case component (TheHive
     * finds the case by the investigation's reference on a retry), or the investigation closed.
     */
    async act(run: StepRun, reviewId: string): Promise<void> {
      const state = await db.withTenant(run.tenantId, async (tx) => {
        const review = await findReview(tx, reviewId);
        if (review?.decision !== 'approved') return undefined;
        const stream = await readInvestigationStream(tx, review.investigation_id);
        const done = stream.some((e) => ACTED.includes(e.type) && e.payload.review_id === reviewId);
        if (done) return undefined;
        return { review, stream, opened: openedOf(stream) };
      });
      if (!state) return;
      const { review, stream, opened } = state;
      const investigationId = review.investigation_id;
      if (review.proposed_action === 'close_investigation') {
        const asked = review.action_params.verdict;
        const verdict = isVerdict(asked) ? asked : 'false_positive';
        await db.withTenant(run.tenantId, async (tx) => {
          await lockInvestigation(tx, investigationId);
          await append(tx, run, investigationId, 'investigation.closed', {
            verdict,
            reason: 'closure approved by an analyst',
            by: 'review',
            review_id: reviewId,
          });
          await audit(tx, run, 'investigation.close', investigationId, {
            verdict,
            review_id: reviewId,
          });
        });
        return;
      }
      let created: { id: string; number: number };
      try {
        created = await openCase(deps.components, run.tenantId, review, stream, opened);
      } catch (error) {
        // A case component that refuses (credentials, input) will refuse every retry; one that
        // is down is retried by the queue, and on the last attempt the failure is recorded.
        if (!(error instanceof IntegrationError) || (error.retryable && !run.lastAttempt))
          throw error;
        await db.withTenant(run.tenantId, async (tx) => {
          await lockInvestigation(tx, investigationId);
          await append(tx, run, investigationId, 'action.failed', {
            review_id: reviewId,
            action: 'open_case',
            kind: error.kind,
            reason: error.message.slice(0, 500),
          });
          await audit(tx, run, 'case.open_failed', investigationId, {
            review_id: reviewId,
            kind: error.kind,
          });
        });
        return;
      }
      await db.withTenant(run.tenantId, async (tx) => {
        await lockInvestigation(tx, investigationId);
        await append(tx, run, investigationId, 'case.opened', {
          review_id: reviewId,
          case_id: created.id,
          case_number: created.number,
        });
        await audit(tx, run, 'case.open', investigationId, {
          review_id: reviewId,
          case_id: created.id,
          case_number: created.number,
        });
      });
    },
  };
}

export type PipelineService = ReturnType<typeof createPipelineService>;

async function analyze(
  client: CortexClient,
  analyzers: string[],
  iocs: Ioc[],
): Promise<AnalyzerRun[]> {
  const results: AnalyzerRun[] = [];
  for (const ioc of iocs) {
    for (const analyzer of analyzers) {
      if (results.length >= MAX_ANALYZER_RUNS) return results;
      const observable = { type: ioc.type, value: ioc.value };
      try {
        const report = await client.analyze(analyzer, {
          dataType: CORTEX_TYPE[ioc.type],
          data: ioc.value,
        });
        results.push({
          analyzer,
          observable,
          success: report.success,
          verdict: report.verdict,
          duration_ms: report.durationMs,
          ...(report.errorMessage ? { error: report.errorMessage.slice(0, 500) } : {}),
        });
      } catch (error) {
        // An analyzer that does not take this data type is not a failure: it was not run.
        if (error instanceof IntegrationError && error.kind === 'rejected') continue;
        if (!(error instanceof IntegrationError)) throw error;
        results.push({
          analyzer,
          observable,
          success: false,
          verdict: 'info',
          duration_ms: 0,
          error: error.message.slice(0, 500),
        });
      }
    }
  }
  return results;
}

type Decision =
  | { kind: 'close'; verdict: Verdict; reason: string }
  | {
      kind: 'review';
      proposed: ProposedAction;
      verdict: string;
      reason: string;
      risk: 'low' | 'medium' | 'high';
      confidence: number | null;
      evidence: unknown[];
    };

const RISK: Record<Severity, 'low' | 'medium' | 'high'> = {
  info: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  critical: 'high',
};

/** The decision rule (docs/pipeline.md "Decide"). */
function decideFrom(stream: PipelineEvent[], opened: Opened, policy: ResolvedPolicy): Decision {
  const triaged = last(stream, 'triage.completed')?.payload as Partial<TriageResult> | undefined;
  const failed = last(stream, 'triage.failed')?.payload;
  const enrichment = last(stream, 'enrichment.completed')?.payload;
  const results = Array.isArray(enrichment?.results)
    ? (enrichment.results as Array<{ analyzer?: string; observable?: unknown; verdict?: string }>)
    : [];
  const malicious = results.filter((r) => r.verdict === 'malicious');
  const evidence = [
    ...(triaged ? [{ kind: 'triage', ...triaged }] : []),
    ...results.map((r) => ({ kind: 'analyzer', ...r })),
  ];
  const severity = isSeverity(triaged?.severity) ? triaged.severity : opened.severity;
  const review = (proposed: ProposedAction, verdict: string, reason: string): Decision => ({
    kind: 'review',
    proposed,
    verdict,
    reason,
    risk: malicious.length > 0 ? 'high' : RISK[severity],
    confidence: typeof triaged?.confidence === 'number' ? triaged.confidence : null,
    evidence,
  });
  if (!triaged) {
    const reason = typeof failed?.reason === 'string' ? failed.reason : 'no triage result';
    return review(
      'open_case',
      'inconclusive',
      `Automatic triage failed (${reason}); an analyst decides.`,
    );
  }
  const rationale = String(triaged.rationale ?? '');
  if (malicious.length > 0) {
    const names = malicious.map((m) => m.analyzer).join(', ');
    return review(
      'open_case',
      'true_positive',
      `Analyzers report malicious indicators (${names}). ${rationale}`,
    );
  }
  if (triaged.by === 'policy') {
    if (triaged.recommended_action === 'close')
      return { kind: 'close', verdict: 'benign', reason: rationale };
    return review('open_case', 'inconclusive', rationale);
  }
  const confident = (triaged.confidence ?? 0) >= policy.min_confidence;
  const harmlessVerdict =
    triaged.verdict === 'false_positive' || triaged.verdict === 'benign' ? triaged.verdict : null;
  const harmless = harmlessVerdict !== null;
  if (confident && harmlessVerdict && triaged.recommended_action === 'close')
    return { kind: 'close', verdict: harmlessVerdict, reason: rationale };
  if (harmless && triaged.recommended_action !== 'escalate')
    return review('close_investigation', String(triaged.verdict), rationale);
  return review('open_case', String(triaged.verdict ?? 'inconclusive'), rationale);
}

/** Opens the case (or finds the one a crashed run opened) and adds the public indicators. */
async function openCase(
  components: TenantComponents,
  tenantId: string,
  review: { rationale: string; investigation_id: string },
  stream: PipelineEvent[],
  opened: Opened | undefined,
): Promise<{ id: string; number: number }> {
  const investigationId = review.investigation_id;
  const cases = await components.cases(tenantId);
  const triaged = last(stream, 'triage.completed')?.payload;
  const severity = isSeverity(triaged?.severity)
    ? triaged.severity
    : (opened?.severity ?? 'medium');
  const created = await cases.createCase({
    title: opened?.title ?? 'Investigation',
    description: caseDescription(review.rationale, triaged, investigationId),
    severity: CASE_SEVERITY[severity],
    tags: ['svc', `svc-investigation:${investigationId}`],
    externalRef: investigationId,
  });
  const iocs = (last(stream, 'enrichment.completed')?.payload.iocs ?? []) as Ioc[];
  const observables = publicIocs(iocs).map((ioc) => ({
    dataType: CORTEX_TYPE[ioc.type] as ObservableType,
    data: ioc.value,
  }));
  if (observables.length > 0) await cases.addObservables(created.id, observables);
  return created;
}

function caseDescription(
  rationale: string,
  triaged: Record<string, unknown> | undefined,
  investigationId: string,
): string {
  const lines = [rationale];
  if (triaged) {
    lines.push(
      '',
      `Triage (${String(triaged.by)}): verdict ${String(triaged.verdict)}, severity ${String(triaged.severity)}, confidence ${String(triaged.confidence)}.`,
    );
  }
  lines.push('', `svc investigation ${investigationId}`);
  return lines.join('\n').slice(0, 10_000);
}

async function audit(
  tx: TenantTx,
  run: StepRun,
  action: string,
  resourceId: string,
  after: Record<string, unknown>,
): Promise<void> {
  await writeAudit(tx, {
    tenantId: run.tenantId,
    actorPrincipal: 'Worker',
    actorId: run.actorId,
    action,
    resourceType: action.startsWith('review') ? 'pending_review' : 'investigation',
    resourceId,
    after,
  });
}
