import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { Link, useParams } from 'react-router-dom';
import { ApiError, ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import { tenantEventsUrl, useTenantEvents } from '../shared/events.ts';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, ErrorState, QueryView } from '../shared/states.tsx';
import { AgentsSection } from './AgentsSection.tsx';
import { BrandingSection } from './BrandingSection.tsx';
import { ConfigurationSection } from './ConfigurationSection.tsx';
import { Field } from './Field.tsx';
import { formProblem } from './field-errors.ts';
import { Modal } from './Modal.tsx';
import { msspKeys } from './query-keys.ts';
import { isAdmin } from './roles.ts';
import { SuspensionAction } from './SuspensionAction.tsx';
import {
  LIFECYCLE_EVENT_TYPES,
  type LifecycleEvent,
  MOVING_STATES,
  PROVISIONING_STEPS,
  type Tenant,
} from './tenant-states.ts';

const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** A tenant: its state, live provisioning progress, lifecycle log and the admins' actions. */
export function TenantPage() {
  const { tenantId = '' } = useParams();
  const identity = useIdentity();
  const key = msspKeys.tenant(tenantId);
  const tenant = useQuery({
    queryKey: key,
    queryFn: () => ok(svc.mssp.getTenant({ params: { tenant_id: tenantId } })),
    // The event stream is the live path; this only catches a stream that dropped.
    refetchInterval: (q) =>
      q.state.data && MOVING_STATES.includes(q.state.data.tenant.state) ? 15_000 : false,
  });
  useTenantEvents(tenantEventsUrl(tenantId), [key, msspKeys.fleet()], LIFECYCLE_EVENT_TYPES);
  return (
    <QueryView query={tenant}>
      {({ tenant: t, lifecycle, adapter }) => (
        <section>
          <h1>{t.display_name}</h1>
          <dl className="facts">
            <dt>Slug</dt>
            <dd>{t.slug}</dd>
            <dt>State</dt>
            <dd>
              <span className={`state-badge state-${t.state}`}>{t.state}</span>
            </dd>
            <dt>Package</dt>
            <dd>
              {t.chart_version ?? 'not installed'}
              {t.upgrade_target && ` (upgrading to ${t.upgrade_target})`}
            </dd>
            <dt>Created</dt>
            <dd>{when(t.created_at)}</dd>
            <dt>Adapter</dt>
            <dd>
              {adapter
                ? `${adapter.status}, version ${adapter.version}, last seen ${when(adapter.last_seen_at)}, ${adapter.alerts_total} alerts`
                : 'not heard from yet'}
            </dd>
          </dl>
          <nav aria-label="This tenant" className="subnav">
            <Link to={`/incidents?tenant=${t.id}`}>Incidents</Link>
            <Link to={`/reviews?tenant=${t.id}`}>Review queue</Link>
            <Link to={`/tenants/${t.id}/policy`}>Triage policy and LLM usage</Link>
            {isAdmin(identity.role) && <Link to={`/users?tenant=${t.id}`}>Users</Link>}
            <Link to={`/view-as/${t.id}`}>View as customer</Link>
          </nav>
          {t.error_details && <Failure details={t.error_details} />}
          {t.drift && (
            <div className="notice">
              <p>Drift found {when(t.drift.detected_at)}:</p>
              <ul>
                {t.drift.findings.map((f) => (
                  <li key={`${f.object}-${f.name}`}>
                    {f.object} {f.name}: {f.problem}, repair {f.repair}
                  </li>
                ))}
              </ul>
            </div>
          )}
          <Progress tenant={t} lifecycle={lifecycle} />
          <Actions tenant={t} />
          <AgentsSection tenant={t} />
          <BrandingSection tenantId={t.id} />
          <ConfigurationSection tenantId={t.id} />
          <h2>Lifecycle</h2>
          <LifecycleLog lifecycle={lifecycle} />
        </section>
      )}
    </QueryView>
  );
}

function Failure({ details }: { details: Record<string, unknown> }) {
  const text = (k: string) => (typeof details[k] === 'string' ? (details[k] as string) : undefined);
  return (
    <div className="error" role="alert">
      <p>
        The last attempt failed{text('step') ? ` at ${text('step')}` : ''}
        {text('code') ? ` (${text('code')})` : ''}.
      </p>
      {text('message') && <p>{text('message')}</p>}
    </div>
  );
}

/** Each provisioning step, done or not, as the `step` lifecycle events record them. */
function Progress({ tenant, lifecycle }: { tenant: Tenant; lifecycle: LifecycleEvent[] }) {
  if (tenant.state !== 'pending' && tenant.state !== 'provisioning') return null;
  const done = new Set(lifecycle.filter((e) => e.kind === 'step').map((e) => e.step));
  const next = PROVISIONING_STEPS.find(
    (s) => !done.has(s.step) && s.step !== 'edge_ports_allocated',
  );
  return (
    <section aria-labelledby="progress-title">
      <h2 id="progress-title">Provisioning</h2>
      <ol className="steps">
        {PROVISIONING_STEPS.map((s) => {
          const status = done.has(s.step)
            ? 'done'
            : s.step === next?.step && !tenant.error_details
              ? 'running'
              : 'waiting';
          return (
            <li key={s.step} className={`step step-${status}`}>
              <span className="step-mark" aria-hidden="true">
                {status === 'done' ? '✓' : status === 'running' ? '…' : '·'}
              </span>
              {s.label}:{' '}
              {status === 'done' ? 'done' : status === 'running' ? 'in progress' : 'waiting'}
            </li>
          );
        })}
      </ol>
    </section>
  );
}

function LifecycleLog({ lifecycle }: { lifecycle: LifecycleEvent[] }) {
  if (lifecycle.length === 0) return <Empty title="No lifecycle events yet." />;
  return (
    <ScrollTable label="Lifecycle events, newest first">
      <caption className="visually-hidden">Lifecycle events, newest first</caption>
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Kind</th>
          <th scope="col">What</th>
          <th scope="col">By</th>
        </tr>
      </thead>
      <tbody>
        {[...lifecycle].reverse().map((e) => (
          <tr key={e.id}>
            <td>{when(e.occurred_at)}</td>
            <td>{e.kind}</td>
            <td>
              {e.from_state || e.to_state ? `${e.from_state ?? '—'} → ${e.to_state ?? '—'}` : ''}
              {e.step ? ` ${e.step}` : ''}
              {typeof e.details.message === 'string' ? `: ${e.details.message}` : ''}
            </td>
            <td>{e.actor}</td>
          </tr>
        ))}
      </tbody>
    </ScrollTable>
  );
}

/** Retry, upgrade, suspend/resume and decommission: for platform_admin and mssp_admin, when the state allows. */
function Actions({ tenant }: { tenant: Tenant }) {
  const identity = useIdentity();
  if (!isAdmin(identity.role)) return null;
  const canRetry = tenant.state === 'pending' && tenant.error_details !== null;
  const active = tenant.state === 'active';
  const suspended = tenant.state === 'suspended';
  if (!canRetry && !active && !suspended) return null;
  return (
    <section aria-labelledby="actions-title">
      <h2 id="actions-title">Actions</h2>
      {canRetry && <Retry tenant={tenant} />}
      {active && <Upgrade tenant={tenant} />}
      {(active || suspended) && <SuspensionAction tenant={tenant} />}
      {(active || suspended) && <Decommission tenant={tenant} />}
    </section>
  );
}

function useTenantMutation<T>(tenantId: string, fn: () => Promise<T>) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: fn,
    onSettled: () => {
      for (const queryKey of msspKeys.tenantChanged(tenantId))
        void queries.invalidateQueries({ queryKey });
    },
  });
}

function Retry({ tenant }: { tenant: Tenant }) {
  const retry = useTenantMutation(tenant.id, () =>
    ok(svc.mssp.retry({ params: { tenant_id: tenant.id } })),
  );
  return (
    <div className="action">
      <p>Provisioning resumes after the last completed step.</p>
      <button type="button" aria-busy={retry.isPending} onClick={() => retry.mutate()}>
        Retry provisioning
      </button>
      {retry.isError && <ErrorState error={retry.error} />}
    </div>
  );
}

/** The problem's own words, and the versions this install has when it names them (422). */
function upgradeProblem(error: unknown): string {
  const summary = formProblem(error, []).summary ?? '';
  if (!(error instanceof ApiError)) return summary;
  const available = (error.problem as Record<string, unknown>).available;
  return Array.isArray(available) && available.length > 0
    ? `${summary} Available: ${available.join(', ')}.`
    : summary;
}

function Upgrade({ tenant }: { tenant: Tenant }) {
  const [version, setVersion] = useState('');
  const upgrade = useTenantMutation(tenant.id, () =>
    ok(
      svc.mssp.upgrade({
        params: { tenant_id: tenant.id },
        body: { tenant_chart_version: version.trim() },
      }),
    ),
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    upgrade.mutate();
  };
  return (
    <form className="action" onSubmit={submit} noValidate>
      <Field
        id="upgrade-version"
        label="Upgrade to tenant package version"
        hint="The compatibility matrix decides: blocked versions are refused, deprecated ones warn."
        autoComplete="off"
        placeholder="1.2.3"
        value={version}
        onValue={setVersion}
      />
      <button type="submit" aria-busy={upgrade.isPending} disabled={!version.trim()}>
        Upgrade
      </button>
      {upgrade.isError && (
        <p className="error" role="alert">
          {upgradeProblem(upgrade.error)}
        </p>
      )}
      {upgrade.data && (
        <div className="notice" role="status">
          <p>
            Upgrade to {upgrade.data.tenant.upgrade_target ?? version} started (
            {upgrade.data.compatibility}).
          </p>
          {upgrade.data.warnings.length > 0 && (
            <ul aria-label="Compatibility warnings">
              {upgrade.data.warnings.map((w) => (
                <li key={w}>{w}</li>
              ))}
            </ul>
          )}
        </div>
      )}
    </form>
  );
}

/** Decommissioning starts the grace period; the slug must be typed to confirm it. */
function Decommission({ tenant }: { tenant: Tenant }) {
  const [open, setOpen] = useState(false);
  const [typed, setTyped] = useState('');
  const decommission = useTenantMutation(tenant.id, () =>
    ok(svc.mssp.decommission({ params: { tenant_id: tenant.id } })),
  );
  const close = () => {
    setOpen(false);
    setTyped('');
  };
  const confirm = (event: FormEvent) => {
    event.preventDefault();
    if (typed !== tenant.slug) return;
    decommission.mutate(undefined, { onSuccess: close });
  };
  return (
    <div className="action">
      <button type="button" className="danger" onClick={() => setOpen(true)}>
        Decommission
      </button>
      <Modal open={open} title={`Decommission ${tenant.display_name}?`} onClose={close}>
        <form onSubmit={confirm} noValidate>
          <p>
            The tenant stops and its grace period begins. Type the slug{' '}
            <strong>{tenant.slug}</strong> to confirm.
          </p>
          <Field
            id="decommission-slug"
            label="Slug"
            autoComplete="off"
            value={typed}
            onValue={setTyped}
          />
          {decommission.isError && <ErrorState error={decommission.error} />}
          <div className="modal-actions">
            <button type="button" onClick={close}>
              Cancel
            </button>
            <button
              type="submit"
              className="danger"
              disabled={typed !== tenant.slug}
              aria-busy={decommission.isPending}
            >
              Decommission {tenant.slug}
            </button>
          </div>
        </form>
      </Modal>
    </div>
  );
}
