import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import type { Static } from 'typebox';
import type { msspContract } from '../../contracts/index.ts';
import type { NotificationType, WebhookCreate } from '../../contracts/mssp/notifications.ts';
import { ok, svc } from '../shared/api.ts';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, ErrorState, QueryView } from '../shared/states.tsx';
import { Field } from './Field.tsx';
import { formProblem } from './field-errors.ts';
import { msspKeys } from './query-keys.ts';
import { TenantPicker, useTenantParam } from './TenantPicker.tsx';

type Webhook = Static<(typeof msspContract.getInstallWebhook.responses)[200]>;
type Attempt = Static<(typeof msspContract.installWebhookDeliveries.responses)[200]>['items'][0];
type TestResult = Static<(typeof msspContract.testInstallWebhook.responses)[200]>;

/** What a webhook can be told about, as the reader sees it (docs/notifications.md). */
const EVENTS: ReadonlyArray<[NotificationType, string]> = [
  ['review.waiting', 'A review waits longer than the threshold'],
  ['incident.severity', 'An incident at or above the severity'],
  ['provisioning.failed', 'Provisioning failed'],
  ['drift.detected', 'Drift detected'],
  ['adapter.silent', 'The adapter went silent'],
  ['llm.budget_exhausted', 'The LLM budget is spent'],
];
const SEVERITIES = ['info', 'low', 'medium', 'high', 'critical'] as const;
const FIELDS = ['/name', '/url', '/events', '/thresholds'] as const;

/** Install webhooks (no tenant chosen) or one tenant's: `undefined` is the install. */
type Scope = string | undefined;

const api = {
  list: (scope: Scope) =>
    scope
      ? ok(svc.mssp.listTenantWebhooks({ params: { tenant_id: scope } }))
      : ok(svc.mssp.listInstallWebhooks()),
  create: (scope: Scope, body: WebhookCreate) =>
    scope
      ? ok(svc.mssp.createTenantWebhook({ params: { tenant_id: scope }, body }))
      : ok(svc.mssp.createInstallWebhook({ body })),
  update: (scope: Scope, id: string, body: Partial<WebhookCreate>) =>
    scope
      ? ok(svc.mssp.updateTenantWebhook({ params: { tenant_id: scope, webhook_id: id }, body }))
      : ok(svc.mssp.updateInstallWebhook({ params: { webhook_id: id }, body })),
  remove: (scope: Scope, id: string) =>
    scope
      ? ok(svc.mssp.deleteTenantWebhook({ params: { tenant_id: scope, webhook_id: id } }))
      : ok(svc.mssp.deleteInstallWebhook({ params: { webhook_id: id } })),
  test: (scope: Scope, id: string) =>
    scope
      ? ok(svc.mssp.testTenantWebhook({ params: { tenant_id: scope, webhook_id: id } }))
      : ok(svc.mssp.testInstallWebhook({ params: { webhook_id: id } })),
  log: (scope: Scope, id: string) =>
    scope
      ? ok(svc.mssp.tenantWebhookDeliveries({ params: { tenant_id: scope, webhook_id: id } }))
      : ok(svc.mssp.installWebhookDeliveries({ params: { webhook_id: id } })),
};

/** Outbound webhooks of the install or of one tenant: list, create, edit, test, log. */
export function NotificationsPage() {
  const [tenant, setTenant] = useTenantParam();
  const [editing, setEditing] = useState<Webhook | 'new' | null>(null);
  const [logOf, setLogOf] = useState<Webhook | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const list = useQuery({
    queryKey: msspKeys.webhookList(tenant),
    queryFn: () => api.list(tenant),
  });
  const choose = (id: string | undefined) => {
    setTenant(id);
    setEditing(null);
    setLogOf(null);
    setSecret(null);
  };
  return (
    <section>
      <h1>Notifications</h1>
      <p className="hint">
        Webhooks tell people when a review waits, an incident is severe, provisioning fails, drift
        is found, an adapter goes silent or an LLM budget runs out. Each request is signed (Standard
        Webhooks); install webhooks hear every tenant.
      </p>
      <TenantPicker value={tenant} onChange={choose} allLabel="Install (every tenant)" />
      {secret && <SigningSecret secret={secret} onDone={() => setSecret(null)} />}
      {editing === null ? (
        <button type="button" className="primary" onClick={() => setEditing('new')}>
          Add webhook
        </button>
      ) : (
        <WebhookForm
          key={editing === 'new' ? 'new' : editing.id}
          scope={tenant}
          webhook={editing === 'new' ? undefined : editing}
          onDone={(created) => {
            setEditing(null);
            if (created) setSecret(created);
          }}
        />
      )}
      <h2>{tenant ? "This tenant's webhooks" : 'Install webhooks'}</h2>
      <QueryView
        query={list}
        isEmpty={(d) => d.items.length === 0}
        empty={<Empty title="No webhooks yet." />}
      >
        {(d) => (
          <WebhookTable
            scope={tenant}
            items={d.items}
            onEdit={(w) => setEditing(w)}
            onLog={(w) => setLogOf(w)}
          />
        )}
      </QueryView>
      {logOf && <DeliveryLog scope={tenant} webhook={logOf} />}
    </section>
  );
}

/** The signing secret, shown once right after creation. */
function SigningSecret({ secret, onDone }: { secret: string; onDone: () => void }) {
  const id = useId();
  return (
    <div className="one-time" role="status">
      <label htmlFor={id}>Signing secret</label>
      <input
        id={id}
        readOnly
        value={secret}
        spellCheck={false}
        autoComplete="off"
        onFocus={(e) => e.target.select()}
      />
      <p className="hint">
        Give it to the receiver to verify signatures. It is shown only once; to change it, add a new
        webhook and delete this one.
      </p>
      <button type="button" onClick={onDone}>
        Done
      </button>
    </div>
  );
}

interface Draft {
  name: string;
  url: string;
  format: 'standard' | 'slack';
  events: NotificationType[];
  review_wait_minutes: string;
  min_severity: (typeof SEVERITIES)[number];
  adapter_silent_minutes: string;
  enabled: boolean;
}

function draftOf(w: Webhook | undefined): Draft {
  return {
    name: w?.name ?? '',
    url: w?.url ?? '',
    format: w?.format ?? 'standard',
    events: w ? [...w.events] : ['review.waiting', 'incident.severity'],
    review_wait_minutes: String(w?.thresholds.review_wait_minutes ?? 30),
    min_severity: w?.thresholds.min_severity ?? 'high',
    adapter_silent_minutes: String(w?.thresholds.adapter_silent_minutes ?? 15),
    enabled: w?.enabled ?? true,
  };
}

function bodyOf(d: Draft): WebhookCreate {
  return {
    name: d.name,
    url: d.url,
    format: d.format,
    events: d.events,
    thresholds: {
      review_wait_minutes: Number(d.review_wait_minutes),
      min_severity: d.min_severity,
      adapter_silent_minutes: Number(d.adapter_silent_minutes),
    },
    enabled: d.enabled,
  };
}

function WebhookForm(props: {
  scope: Scope;
  webhook: Webhook | undefined;
  onDone: (createdSecret?: string) => void;
}) {
  const { scope, webhook } = props;
  const [draft, setDraft] = useState<Draft>(() => draftOf(webhook));
  const queries = useQueryClient();
  const save = useMutation({
    mutationFn: async (body: WebhookCreate) =>
      webhook
        ? { secret: undefined, hook: await api.update(scope, webhook.id, body) }
        : await api
            .create(scope, body)
            .then((c) => ({ secret: c.signing_secret, hook: c.webhook })),
    onSuccess: async ({ secret }) => {
      await queries.invalidateQueries({ queryKey: msspKeys.webhookList(scope) });
      props.onDone(secret);
    },
  });
  const problem = formProblem(save.error, FIELDS);
  const set = (key: keyof Draft) => (value: string) => setDraft((d) => ({ ...d, [key]: value }));
  const formatId = useId();
  const severityId = useId();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate(bodyOf(draft));
  };
  return (
    <form onSubmit={submit} noValidate className="narrow">
      <h2>{webhook ? `Edit ${webhook.name}` : 'Add webhook'}</h2>
      {problem.summary && (
        <p className="error" role="alert">
          {problem.summary}
        </p>
      )}
      <Field
        id="webhook-name"
        label="Name"
        value={draft.name}
        onValue={set('name')}
        error={problem.fields['/name']}
      />
      <Field
        id="webhook-url"
        label="URL"
        type="url"
        hint="https://… A receiver inside the cluster or on a private address is refused."
        value={draft.url}
        onValue={set('url')}
        error={problem.fields['/url']}
      />
      <label htmlFor={formatId}>Format</label>
      <select
        id={formatId}
        value={draft.format}
        onChange={(e) => setDraft((d) => ({ ...d, format: e.target.value as Draft['format'] }))}
      >
        <option value="standard">Standard Webhooks JSON</option>
        <option value="slack">Slack incoming webhook</option>
      </select>
      <fieldset>
        <legend>Notify about</legend>
        {EVENTS.map(([type, label]) => (
          <label key={type} className="check">
            <input
              type="checkbox"
              checked={draft.events.includes(type)}
              onChange={(e) =>
                setDraft((d) => ({
                  ...d,
                  events: e.target.checked
                    ? [...d.events, type]
                    : d.events.filter((t) => t !== type),
                }))
              }
            />
            {label}
          </label>
        ))}
        {problem.fields['/events'] && <p className="field-error">{problem.fields['/events']}</p>}
      </fieldset>
      <Field
        id="webhook-review-wait"
        label="Review waiting longer than (minutes)"
        type="number"
        min={1}
        max={10080}
        value={draft.review_wait_minutes}
        onValue={set('review_wait_minutes')}
        error={problem.fields['/thresholds']}
      />
      <label htmlFor={severityId}>Incident severity at least</label>
      <select
        id={severityId}
        value={draft.min_severity}
        onChange={(e) =>
          setDraft((d) => ({ ...d, min_severity: e.target.value as Draft['min_severity'] }))
        }
      >
        {SEVERITIES.map((s) => (
          <option key={s} value={s}>
            {s}
          </option>
        ))}
      </select>
      <Field
        id="webhook-adapter-silent"
        label="Adapter silent longer than (minutes)"
        type="number"
        min={1}
        max={10080}
        value={draft.adapter_silent_minutes}
        onValue={set('adapter_silent_minutes')}
      />
      <label className="check">
        <input
          type="checkbox"
          checked={draft.enabled}
          onChange={(e) => setDraft((d) => ({ ...d, enabled: e.target.checked }))}
        />
        Enabled
      </label>
      <div className="actions">
        <button type="submit" className="primary" aria-busy={save.isPending}>
          {webhook ? 'Save webhook' : 'Create webhook'}
        </button>
        <button type="button" onClick={() => props.onDone()}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function WebhookTable(props: {
  scope: Scope;
  items: Webhook[];
  onEdit: (w: Webhook) => void;
  onLog: (w: Webhook) => void;
}) {
  const { scope } = props;
  const queries = useQueryClient();
  const [result, setResult] = useState<{ name: string; result: TestResult } | null>(null);
  const refresh = () => queries.invalidateQueries({ queryKey: msspKeys.webhooks() });
  const test = useMutation({
    mutationFn: async (w: Webhook) => ({ name: w.name, result: await api.test(scope, w.id) }),
    onSuccess: async (r) => {
      setResult(r);
      await refresh();
    },
  });
  const toggle = useMutation({
    mutationFn: (w: Webhook) => api.update(scope, w.id, { enabled: !w.enabled }),
    onSuccess: refresh,
  });
  const remove = useMutation({
    mutationFn: (w: Webhook) => api.remove(scope, w.id),
    onSuccess: refresh,
  });
  const failure = test.error ?? toggle.error ?? remove.error;
  return (
    <>
      {failure && <ErrorState error={failure} />}
      {result && (
        <p className={result.result.delivered ? 'notice' : 'error'} role="status">
          Test send to {result.name}:{' '}
          {result.result.delivered
            ? `delivered (${result.result.attempt.status_code}).`
            : `not delivered: ${result.result.attempt.error}.`}
        </p>
      )}
      <ScrollTable label="Webhooks">
        <caption className="visually-hidden">Webhooks</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">URL</th>
            <th scope="col">Format</th>
            <th scope="col">Notifies about</th>
            <th scope="col">State</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {props.items.map((w) => (
            <tr key={w.id}>
              <td>{w.name}</td>
              <td>{w.url}</td>
              <td>{w.format}</td>
              <td>{w.events.join(', ')}</td>
              <td>{w.enabled ? 'Enabled' : 'Disabled'}</td>
              <td className="actions">
                <button
                  type="button"
                  onClick={() => test.mutate(w)}
                  aria-busy={test.isPending && test.variables?.id === w.id}
                  aria-label={`Test send to ${w.name}`}
                >
                  Test send
                </button>
                <button
                  type="button"
                  onClick={() => props.onLog(w)}
                  aria-label={`Delivery log of ${w.name}`}
                >
                  Delivery log
                </button>
                <button type="button" onClick={() => props.onEdit(w)} aria-label={`Edit ${w.name}`}>
                  Edit
                </button>
                <button
                  type="button"
                  onClick={() => toggle.mutate(w)}
                  aria-label={`${w.enabled ? 'Disable' : 'Enable'} ${w.name}`}
                >
                  {w.enabled ? 'Disable' : 'Enable'}
                </button>
                <button
                  type="button"
                  className="danger"
                  onClick={() => {
                    if (window.confirm(`Delete the webhook ${w.name}?`)) remove.mutate(w);
                  }}
                  aria-label={`Delete ${w.name}`}
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </ScrollTable>
    </>
  );
}

function DeliveryLog({ scope, webhook }: { scope: Scope; webhook: Webhook }) {
  const log = useQuery({
    queryKey: msspKeys.webhookLog(scope, webhook.id),
    queryFn: () => api.log(scope, webhook.id),
  });
  return (
    <>
      <h2>Delivery log of {webhook.name}</h2>
      <QueryView
        query={log}
        isEmpty={(d) => d.items.length === 0}
        empty={<Empty title="Nothing sent to this webhook yet." />}
      >
        {(d) => (
          <ScrollTable label={`Delivery log of ${webhook.name}, newest first`}>
            <caption className="visually-hidden">
              Delivery log of {webhook.name}, newest first
            </caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Notification</th>
                <th scope="col">Attempt</th>
                <th scope="col">Answer</th>
                <th scope="col">Excerpt or error</th>
                <th scope="col">Duration</th>
              </tr>
            </thead>
            <tbody>
              {d.items.map((a: Attempt) => (
                <tr key={`${a.delivery_id}-${a.attempt}-${a.attempted_at}`}>
                  <td>{new Date(a.attempted_at).toLocaleString()}</td>
                  <td>{a.event_type}</td>
                  <td>{a.attempt}</td>
                  <td>{a.status_code ?? 'none'}</td>
                  <td>{a.error ?? a.response_excerpt ?? ''}</td>
                  <td>{a.duration_ms} ms</td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
        )}
      </QueryView>
    </>
  );
}
