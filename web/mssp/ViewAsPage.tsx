import { useMutation, useQuery } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { useParams } from 'react-router-dom';
import { ok, svc } from '../shared/api.ts';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, QueryView } from '../shared/states.tsx';
import { formProblem } from './field-errors.ts';
import { type Impersonation, startImpersonation, useImpersonation } from './impersonation.tsx';
import { msspKeys } from './query-keys.ts';

const DURATIONS = [
  { minutes: 5, label: '5 minutes' },
  { minutes: 15, label: '15 minutes' },
  { minutes: 30, label: '30 minutes (the most allowed)' },
] as const;

/**
 * "View as customer": an impersonation token for one tenant (at most 30 minutes, audited at
 * mint and on every use, visible to the customer), then the tenant's incidents, review queue
 * and audit trail read with that token, so what is shown is exactly what the token reaches.
 */
export function ViewAsPage() {
  const { tenantId = '' } = useParams();
  const view = useImpersonation();
  const tenant = useQuery({
    queryKey: msspKeys.tenant(tenantId),
    queryFn: () => ok(svc.mssp.getTenant({ params: { tenant_id: tenantId } })),
  });
  return (
    <QueryView query={tenant}>
      {({ tenant: t }) => (
        <section>
          <h1>View {t.display_name} as customer</h1>
          {view?.tenantId === tenantId ? (
            <CustomerView view={view} />
          ) : (
            <StartView tenantId={t.id} slug={t.slug} other={view?.slug} />
          )}
        </section>
      )}
    </QueryView>
  );
}

function StartView({
  tenantId,
  slug,
  other,
}: {
  tenantId: string;
  slug: string;
  other: string | undefined;
}) {
  const id = useId();
  const [reason, setReason] = useState('');
  const [minutes, setMinutes] = useState(15);
  const start = useMutation({
    mutationFn: async () => {
      const minted = await ok(
        svc.mssp.impersonate({
          params: { tenant_id: tenantId },
          body: { reason: reason.trim(), ttl_seconds: minutes * 60 },
        }),
      );
      // The token goes to memory only, never into the mutation's cached result.
      startImpersonation({ ...minted, slug });
    },
  });
  const problem = formProblem(start.error, ['/reason', '/ttl_seconds']);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate();
  };
  return (
    <div className="narrow">
      <p>
        You will see this tenant's incidents, review queue and audit trail as its token allows. The
        customer's audit trail records that you did, with your reason.
      </p>
      {other && <p className="notice">Starting this view ends your view as {other}.</p>}
      {problem.summary && (
        <p className="error" role="alert">
          {problem.summary}
        </p>
      )}
      <form onSubmit={submit} noValidate>
        <label htmlFor={`${id}-reason`}>Reason</label>
        <textarea
          id={`${id}-reason`}
          rows={2}
          minLength={3}
          maxLength={500}
          aria-invalid={problem.fields['/reason'] ? true : undefined}
          aria-describedby={problem.fields['/reason'] ? `${id}-reason-error` : undefined}
          value={reason}
          onChange={(e) => setReason(e.target.value)}
        />
        {problem.fields['/reason'] && (
          <p id={`${id}-reason-error`} className="field-error">
            {problem.fields['/reason']}
          </p>
        )}
        <label htmlFor={`${id}-ttl`}>For</label>
        <select
          id={`${id}-ttl`}
          value={minutes}
          onChange={(e) => setMinutes(Number(e.target.value))}
        >
          {DURATIONS.map((d) => (
            <option key={d.minutes} value={d.minutes}>
              {d.label}
            </option>
          ))}
        </select>
        <button type="submit" className="primary" aria-busy={start.isPending}>
          Start viewing as customer
        </button>
      </form>
    </div>
  );
}

function CustomerView({ view }: { view: Impersonation }) {
  const params = { tenant_id: view.tenantId };
  const incidents = useQuery({
    queryKey: msspKeys.viewAsIncidents(view.tenantId),
    queryFn: () => ok(view.client.mssp.tenantIncidents({ params, query: { limit: 50 } })),
  });
  const reviews = useQuery({
    queryKey: msspKeys.viewAsReviews(view.tenantId),
    queryFn: () => ok(view.client.mssp.tenantReviews({ params })),
  });
  const audit = useQuery({
    queryKey: msspKeys.viewAsAudit(view.tenantId),
    queryFn: () => ok(view.client.mssp.audit({ query: { tenant_id: view.tenantId, limit: 50 } })),
  });
  return (
    <>
      <h2>Incidents</h2>
      <QueryView
        query={incidents}
        isEmpty={(d) => d.items.length === 0}
        empty={<Empty title="No incidents." />}
      >
        {(d) => (
          <ScrollTable label="Incidents as the customer sees them">
            <caption className="visually-hidden">Incidents as the customer sees them</caption>
            <thead>
              <tr>
                <th scope="col">Incident</th>
                <th scope="col">Severity</th>
                <th scope="col">Status</th>
                <th scope="col">Opened</th>
              </tr>
            </thead>
            <tbody>
              {d.items.map((i) => (
                <tr key={i.id}>
                  <td className="wrap">{i.title}</td>
                  <td>{i.severity}</td>
                  <td>{i.status}</td>
                  <td>{new Date(i.opened_at).toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
        )}
      </QueryView>
      <h2>Review queue</h2>
      <QueryView
        query={reviews}
        isEmpty={(d) => d.items.length === 0}
        empty={<Empty title="No reviews are waiting." />}
      >
        {(d) => (
          <ul>
            {d.items.map((r) => (
              <li key={r.id}>
                {r.proposed_action} ({r.risk} risk), requested{' '}
                {new Date(r.requested_at).toLocaleString()}
              </li>
            ))}
          </ul>
        )}
      </QueryView>
      <h2>Audit trail</h2>
      <QueryView
        query={audit}
        isEmpty={(d) => d.items.length === 0}
        empty={<Empty title="No audit entries." />}
      >
        {(d) => (
          <ScrollTable label="The tenant's audit trail">
            <caption className="visually-hidden">The tenant's audit trail</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Actor</th>
                <th scope="col">Action</th>
              </tr>
            </thead>
            <tbody>
              {d.items.map((r) => (
                <tr key={r.id}>
                  <td>{new Date(r.timestamp).toLocaleString()}</td>
                  <td>
                    {r.actor_principal}:{r.actor_id}
                    {r.acting_as && ' (as customer)'}
                  </td>
                  <td>{r.action}</td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
        )}
      </QueryView>
    </>
  );
}
