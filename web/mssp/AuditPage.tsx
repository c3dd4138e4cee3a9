import { useInfiniteQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { contract } from '../../contracts/index.ts';
import { ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import { LoadMore } from '../shared/LoadMore.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, Loading } from '../shared/states.tsx';
import { Field } from './Field.tsx';
import { formProblem } from './field-errors.ts';
import { msspKeys } from './query-keys.ts';
import { useTenantChoices } from './TenantPicker.tsx';

const PAGE = 100;

interface Filters {
  tenant_id?: string;
  action?: string;
  actor_id?: string;
  since?: string;
  until?: string;
}

interface Draft {
  tenant_id: string;
  action: string;
  actor_id: string;
  since: string;
  until: string;
}

const NO_DRAFT: Draft = { tenant_id: '', action: '', actor_id: '', since: '', until: '' };

/** A `datetime-local` value (the reader's clock) as the RFC 3339 instant the API takes. */
function instant(local: string): string | undefined {
  if (!local) return undefined;
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

function filtersOf(d: Draft): Filters {
  const since = instant(d.since);
  const until = instant(d.until);
  return {
    ...(d.tenant_id && { tenant_id: d.tenant_id }),
    ...(d.action.trim() && { action: d.action.trim() }),
    ...(d.actor_id.trim() && { actor_id: d.actor_id.trim() }),
    ...(since && { since }),
    ...(until && { until }),
  };
}

/**
 * The API's own export (`format=jsonl|csv`, platform_admin only): a plain download link, so
 * the browser streams the file with the session cookie and names it from Content-Disposition.
 */
function exportUrl(filters: Filters, format: 'jsonl' | 'csv'): string {
  const query = new URLSearchParams({ ...filters, format });
  return `${contract.mssp.audit.path}?${query}`;
}

/** The cross-tenant audit log, newest first, filtered and paged with the API's cursor. */
export function AuditPage() {
  const identity = useIdentity();
  const tenants = useTenantChoices();
  const [draft, setDraft] = useState<Draft>(NO_DRAFT);
  const [filters, setFilters] = useState<Filters>({});
  const audit = useInfiniteQuery({
    queryKey: msspKeys.audit(filters),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        svc.mssp.audit({
          query: { ...filters, limit: PAGE, ...(pageParam ? { cursor: pageParam } : {}) },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const slugs = new Map(tenants.data?.items.map((t) => [t.id, t.slug]));
  const problem = formProblem(audit.error, [
    '/query/action',
    '/query/actor_id',
    '/query/since',
    '/query/until',
  ]);
  const set = (key: keyof Draft) => (value: string) => setDraft((d) => ({ ...d, [key]: value }));
  const apply = (event: FormEvent) => {
    event.preventDefault();
    setFilters(filtersOf(draft));
  };
  const items = audit.data?.pages.flatMap((p) => p.items) ?? [];

  return (
    <section>
      <h1>Audit log</h1>
      <form className="filters" onSubmit={apply} noValidate aria-label="Audit filters">
        <div className="filter">
          <label htmlFor="audit-tenant">Tenant</label>
          <select
            id="audit-tenant"
            value={draft.tenant_id}
            onChange={(e) => set('tenant_id')(e.target.value)}
          >
            <option value="">All tenants and the install</option>
            {tenants.data?.items.map((t) => (
              <option key={t.id} value={t.id}>
                {t.slug}
              </option>
            ))}
          </select>
        </div>
        <div className="filter">
          <Field
            id="audit-action"
            label="Action"
            placeholder="user.impersonate"
            autoComplete="off"
            value={draft.action}
            onValue={set('action')}
            error={problem.fields['/query/action']}
          />
        </div>
        <div className="filter">
          <Field
            id="audit-actor"
            label="Actor id"
            autoComplete="off"
            value={draft.actor_id}
            onValue={set('actor_id')}
            error={problem.fields['/query/actor_id']}
          />
        </div>
        <div className="filter">
          <Field
            id="audit-since"
            label="Since"
            type="datetime-local"
            value={draft.since}
            onValue={set('since')}
            error={problem.fields['/query/since']}
          />
        </div>
        <div className="filter">
          <Field
            id="audit-until"
            label="Until"
            type="datetime-local"
            value={draft.until}
            onValue={set('until')}
            error={problem.fields['/query/until']}
          />
        </div>
        <div className="filter filter-actions">
          <button type="submit">Apply filters</button>
        </div>
      </form>
      {identity.role === 'platform_admin' && (
        <p className="exports">
          Export with these filters:{' '}
          <a href={exportUrl(filters, 'jsonl')} download>
            JSON Lines
          </a>{' '}
          <a href={exportUrl(filters, 'csv')} download>
            CSV
          </a>
        </p>
      )}
      {audit.isPending ? (
        <Loading />
      ) : audit.isError && !audit.isFetchNextPageError ? (
        <div className="state state-error" role="alert">
          <p>{problem.summary}</p>
          <button type="button" onClick={() => void audit.refetch()}>
            Try again
          </button>
        </div>
      ) : items.length === 0 ? (
        <Empty title="No audit entries match these filters." />
      ) : (
        <>
          <ScrollTable label="Audit entries, newest first">
            <caption className="visually-hidden">Audit entries, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Tenant</th>
                <th scope="col">Actor</th>
                <th scope="col">Action</th>
                <th scope="col">Resource</th>
                <th scope="col">Request</th>
              </tr>
            </thead>
            <tbody>
              {items.map((r) => (
                <tr key={r.id}>
                  <td>{new Date(r.timestamp).toLocaleString()}</td>
                  <td>{r.tenant_id ? (slugs.get(r.tenant_id) ?? r.tenant_id) : 'install'}</td>
                  <td>
                    {r.actor_principal}:{r.actor_id}
                    {r.acting_as && ' (as customer)'}
                  </td>
                  <td>{r.action}</td>
                  <td>
                    {r.resource_type}
                    {r.resource_id ? ` ${r.resource_id}` : ''}
                  </td>
                  <td>{r.request_id ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
          <LoadMore query={audit} shown={items.length} noun="entries" />
        </>
      )}
    </section>
  );
}
