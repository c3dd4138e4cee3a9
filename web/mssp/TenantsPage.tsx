import { useInfiniteQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { Link, useSearchParams } from 'react-router-dom';
import { ok, svc } from '../shared/api.ts';
import { useIdentity } from '../shared/auth.tsx';
import { LoadMore } from '../shared/LoadMore.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, ErrorState, Loading } from '../shared/states.tsx';
import { msspKeys } from './query-keys.ts';
import { isAdmin } from './roles.ts';
import { TENANT_STATES, type TenantState } from './tenant-states.ts';

const PAGE = 50;

function isState(value: string | null): value is TenantState {
  return TENANT_STATES.includes(value as TenantState);
}

/** Every tenant, newest first, filtered by state, paged with the API's cursor. */
export function TenantsPage() {
  const identity = useIdentity();
  const filterId = useId();
  const [params, setParams] = useSearchParams();
  const raw = params.get('state');
  const state = isState(raw) ? raw : undefined;
  const tenants = useInfiniteQuery({
    queryKey: msspKeys.tenantList(state),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        svc.mssp.listTenants({
          query: {
            limit: PAGE,
            ...(state ? { state } : {}),
            ...(pageParam ? { cursor: pageParam } : {}),
          },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const items = tenants.data?.pages.flatMap((p) => p.items) ?? [];
  const canCreate = isAdmin(identity.role);

  return (
    <section>
      <div className="page-head">
        <h1>Tenants</h1>
        {canCreate && (
          <Link className="button-link" to="/tenants/new">
            Create tenant
          </Link>
        )}
      </div>
      <div className="toolbar">
        <label htmlFor={filterId}>State</label>
        <select
          id={filterId}
          value={state ?? ''}
          onChange={(e) =>
            setParams(e.target.value ? { state: e.target.value } : {}, { replace: true })
          }
        >
          <option value="">All states</option>
          {TENANT_STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </div>
      {tenants.isPending ? (
        <Loading />
      ) : tenants.isError && !tenants.isFetchNextPageError ? (
        <ErrorState error={tenants.error} retry={() => void tenants.refetch()} />
      ) : items.length === 0 ? (
        <Empty title={state ? `No tenants are ${state}.` : 'No tenants yet.'} />
      ) : (
        <>
          <ScrollTable label="Tenants">
            <caption className="visually-hidden">Tenants</caption>
            <thead>
              <tr>
                <th scope="col">Tenant</th>
                <th scope="col">Slug</th>
                <th scope="col">State</th>
                <th scope="col">Package</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {items.map((t) => (
                <tr key={t.id}>
                  <td>
                    <Link to={`/tenants/${t.id}`}>{t.display_name}</Link>
                  </td>
                  <td>{t.slug}</td>
                  <td>
                    {t.state}
                    {t.error_details ? ' (failed)' : ''}
                  </td>
                  <td>{t.chart_version ?? '—'}</td>
                  <td>{new Date(t.created_at).toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </ScrollTable>
          <LoadMore query={tenants} shown={items.length} noun="tenants" />
        </>
      )}
    </section>
  );
}
