import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useParams } from 'react-router-dom';
import type { Static } from 'typebox';
import type { msspContract } from '../../contracts/index.ts';
import type { TriagePolicy } from '../../contracts/triage-policy.ts';
import { ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, QueryView } from '../shared/states.tsx';
import { Field } from './Field.tsx';
import { formProblem } from './field-errors.ts';
import { msspKeys } from './query-keys.ts';
import { isAdmin } from './roles.ts';

type PolicyView = Static<(typeof msspContract.getTriagePolicy.responses)[200]>;
type Policy = PolicyView['policy'];

/** Body pointers the editor has a field for (400 validation_failed, 422 invalid_policy). */
const FIELDS = [
  '/auto_close_below_level',
  '/always_escalate_rule_groups',
  '/never_send_fields',
  '/redaction',
  '/redaction/custom',
  '/analyzers',
  '/min_confidence',
  '/daily_budget/tokens',
  '/daily_budget/cost_usd',
] as const;

interface Draft {
  auto_close_below_level: string;
  always_escalate_rule_groups: string;
  never_send_fields: string;
  emails: boolean;
  ips: boolean;
  usernames: boolean;
  hostnames: boolean;
  custom: string;
  analyzers: string;
  min_confidence: string;
  tokens: string;
  cost_usd: string;
}

const lines = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

/** The policy in force as the form's text (one list item per line, `name=pattern` for custom). */
function draftOf(p: Policy): Draft {
  const r = p.redaction ?? {};
  return {
    auto_close_below_level: String(p.auto_close_below_level ?? ''),
    always_escalate_rule_groups: (p.always_escalate_rule_groups ?? []).join('\n'),
    never_send_fields: (p.never_send_fields ?? []).join('\n'),
    emails: r.emails ?? false,
    ips: r.ips ?? false,
    usernames: r.usernames ?? false,
    hostnames: r.hostnames ?? false,
    custom: (r.custom ?? []).map((c) => `${c.name}=${c.pattern}`).join('\n'),
    analyzers: (p.analyzers ?? []).join('\n'),
    min_confidence: String(p.min_confidence ?? ''),
    tokens: p.daily_budget?.tokens == null ? '' : String(p.daily_budget.tokens),
    cost_usd: p.daily_budget?.cost_usd == null ? '' : String(p.daily_budget.cost_usd),
  };
}

/** A number field's text as the API's value: empty is "no limit" (null) where allowed. */
const numberOrNull = (text: string) => (text.trim() === '' ? null : Number(text));

/** The whole policy: PUT replaces it, so every key the form shows is sent. */
function policyOf(d: Draft): TriagePolicy {
  const level = numberOrNull(d.auto_close_below_level);
  const confidence = numberOrNull(d.min_confidence);
  return {
    ...(level !== null && { auto_close_below_level: level }),
    always_escalate_rule_groups: lines(d.always_escalate_rule_groups),
    never_send_fields: lines(d.never_send_fields),
    redaction: {
      emails: d.emails,
      ips: d.ips,
      usernames: d.usernames,
      hostnames: d.hostnames,
      custom: lines(d.custom).map((line) => {
        // Names cannot hold `=` (contracts/triage-policy.ts), so the first one separates.
        const at = line.indexOf('=');
        return at < 0
          ? { name: line, pattern: '' }
          : { name: line.slice(0, at).trim(), pattern: line.slice(at + 1).trim() };
      }),
    },
    analyzers: lines(d.analyzers),
    ...(confidence !== null && { min_confidence: confidence }),
    daily_budget: { tokens: numberOrNull(d.tokens), cost_usd: numberOrNull(d.cost_usd) },
  };
}

/** A tenant's triage policy (the rules before any model, redaction, budget) and its LLM use. */
export function PolicyPage() {
  const { tenantId = '' } = useParams();
  const policy = useQuery({
    queryKey: msspKeys.policy(tenantId),
    queryFn: () => ok(svc.mssp.getTriagePolicy({ params: { tenant_id: tenantId } })),
  });
  return (
    <section>
      <h1>Triage policy and LLM usage</h1>
      <p>
        <Link to={`/tenants/${tenantId}`}>Back to the tenant</Link>
      </p>
      <QueryView query={policy}>
        {(view) => <PolicyEditor key={tenantId} tenantId={tenantId} view={view} />}
      </QueryView>
      <h2>LLM usage</h2>
      <Usage tenantId={tenantId} />
    </section>
  );
}

function PolicyEditor({ tenantId, view }: { tenantId: string; view: PolicyView }) {
  const identity = useIdentity();
  const editable = isAdmin(identity.role);
  const [draft, setDraft] = useState<Draft>(() => draftOf(view.policy));
  const queries = useQueryClient();
  const save = useMutation({
    mutationFn: (body: TriagePolicy) =>
      ok(svc.mssp.putTriagePolicy({ params: { tenant_id: tenantId }, body })),
    onSuccess: (saved) => queries.setQueryData(msspKeys.policy(tenantId), saved),
  });
  const problem = formProblem(save.error, FIELDS);
  const set = (key: keyof Draft) => (value: string) => setDraft((d) => ({ ...d, [key]: value }));
  const check = (key: 'emails' | 'ips' | 'usernames' | 'hostnames') => (
    <label className="check">
      <input
        type="checkbox"
        checked={draft[key]}
        onChange={(e) => setDraft((d) => ({ ...d, [key]: e.target.checked }))}
      />
      Redact {key}
    </label>
  );
  const area = (
    key: keyof Draft,
    pointer: (typeof FIELDS)[number],
    label: string,
    hint: string,
  ) => {
    const id = `policy-${key}`;
    const error = problem.fields[pointer];
    return (
      <>
        <label htmlFor={id}>{label}</label>
        <textarea
          id={id}
          rows={3}
          value={String(draft[key])}
          onChange={(e) => set(key)(e.target.value)}
          aria-invalid={error ? true : undefined}
          aria-describedby={`${id}-hint${error ? ` ${id}-error` : ''}`}
        />
        <p id={`${id}-hint`} className="field-hint">
          {hint}
        </p>
        {error && (
          <p id={`${id}-error`} className="field-error">
            {error}
          </p>
        )}
      </>
    );
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(policyOf(draft));
  };
  return (
    <div className="narrow">
      <p className="hint">
        {view.stored
          ? `Set ${view.updated_at ? new Date(view.updated_at).toLocaleString() : ''}.`
          : 'This tenant runs on the defaults.'}
      </p>
      {problem.summary && (
        <p className="error" role="alert">
          {problem.summary}
        </p>
      )}
      {save.isSuccess && (
        <p className="notice" role="status">
          Policy saved.
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <fieldset disabled={!editable} className="plain">
          <legend className="visually-hidden">Triage policy</legend>
          <Field
            id="policy-level"
            label="Close as benign below rule level"
            type="number"
            min={0}
            max={16}
            value={draft.auto_close_below_level}
            onValue={set('auto_close_below_level')}
            error={problem.fields['/auto_close_below_level']}
          />
          {area(
            'always_escalate_rule_groups',
            '/always_escalate_rule_groups',
            'Always escalate these rule groups',
            'One Wazuh rule group per line.',
          )}
          {area(
            'never_send_fields',
            '/never_send_fields',
            'Never send these fields to a model',
            'One dotted path per line, e.g. data.srcuser.',
          )}
          <fieldset>
            <legend>Redaction</legend>
            {check('emails')}
            {check('ips')}
            {check('usernames')}
            {check('hostnames')}
            {area(
              'custom',
              '/redaction/custom',
              'Custom patterns',
              'One per line: name=regular expression.',
            )}
            {problem.fields['/redaction'] && (
              <p className="field-error">{problem.fields['/redaction']}</p>
            )}
          </fieldset>
          {area('analyzers', '/analyzers', 'Analyzers', 'One Cortex analyzer name per line.')}
          <Field
            id="policy-confidence"
            label="Minimum model confidence"
            type="number"
            min={0}
            max={1}
            step={0.05}
            value={draft.min_confidence}
            onValue={set('min_confidence')}
            error={problem.fields['/min_confidence']}
          />
          <Field
            id="policy-tokens"
            label="Daily token budget"
            hint="Empty: no limit."
            type="number"
            min={0}
            value={draft.tokens}
            onValue={set('tokens')}
            error={problem.fields['/daily_budget/tokens']}
          />
          <Field
            id="policy-cost"
            label="Daily cost budget (USD)"
            hint="Empty: no limit."
            type="number"
            min={0}
            step={0.01}
            value={draft.cost_usd}
            onValue={set('cost_usd')}
            error={problem.fields['/daily_budget/cost_usd']}
          />
        </fieldset>
        {editable && (
          <button type="submit" className="primary" aria-busy={save.isPending}>
            Save policy
          </button>
        )}
      </form>
    </div>
  );
}

function Usage({ tenantId }: { tenantId: string }) {
  const usage = useQuery({
    queryKey: msspKeys.llmUsage(tenantId),
    queryFn: () => ok(svc.mssp.llmUsage({ params: { tenant_id: tenantId }, query: { days: 30 } })),
  });
  return (
    <QueryView query={usage}>
      {(d) => (
        <>
          <p>
            Daily budget: {d.daily_budget.tokens ?? 'no token limit'}
            {d.daily_budget.tokens !== null && ' tokens'},{' '}
            {d.daily_budget.cost_usd === null ? 'no cost limit' : `$${d.daily_budget.cost_usd}`}.
          </p>
          {/* The API lists every day of the window, zeros included. */}
          {d.days.every((day) => day.calls === 0 && day.refused_over_budget === 0) ? (
            <Empty title="No model calls in the last 30 days." />
          ) : (
            <ScrollTable label="LLM usage per UTC day, newest first">
              <caption className="visually-hidden">LLM usage per UTC day, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Day (UTC)</th>
                  <th scope="col">Calls</th>
                  <th scope="col">Input tokens</th>
                  <th scope="col">Output tokens</th>
                  <th scope="col">Cost (USD)</th>
                  <th scope="col">Cache hits</th>
                  <th scope="col">Cache misses</th>
                  <th scope="col">Refused over budget</th>
                </tr>
              </thead>
              <tbody>
                {d.days.map((day) => (
                  <tr key={day.day}>
                    <td>{day.day}</td>
                    <td>{day.calls}</td>
                    <td>{day.input_tokens}</td>
                    <td>{day.output_tokens}</td>
                    <td>{day.cost_usd.toFixed(4)}</td>
                    <td>{day.cache_hits}</td>
                    <td>{day.cache_misses}</td>
                    <td>{day.refused_over_budget}</td>
                  </tr>
                ))}
              </tbody>
            </ScrollTable>
          )}
        </>
      )}
    </QueryView>
  );
}
