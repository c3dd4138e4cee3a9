import { useQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { useSearchParams } from 'react-router-dom';
import { ok, svc } from '../shared/api.ts';
import { ErrorState } from '../shared/states.tsx';
import { msspKeys } from './query-keys.ts';

/**
 * The chosen tenant of a page, kept in the URL (`?tenant=<id>`) so the page can be linked to
 * and reloaded. Customer users are listed per tenant only, so that page asks which tenant
 * first; incidents and reviews show every tenant until one is chosen.
 */
export function useTenantParam(): [string | undefined, (id: string | undefined) => void] {
  const [params, setParams] = useSearchParams();
  const tenant = params.get('tenant') ?? undefined;
  const choose = (id: string | undefined) =>
    setParams(
      (prev) => {
        const next = new URLSearchParams(prev);
        if (id) next.set('tenant', id);
        else next.delete('tenant');
        return next;
      },
      { replace: true },
    );
  return [tenant, choose];
}

/** Tenants to choose from: the first 200 by the API's order (its largest page). */
export function useTenantChoices() {
  return useQuery({
    queryKey: msspKeys.tenantChoices(),
    queryFn: () => ok(svc.mssp.listTenants({ query: { limit: 200 } })),
  });
}

export function TenantPicker(props: {
  value: string | undefined;
  onChange: (id: string | undefined) => void;
  /** What choosing no tenant means on this page; default "Choose a tenant". */
  allLabel?: string;
}) {
  const id = useId();
  const tenants = useTenantChoices();
  if (tenants.isError) {
    return <ErrorState error={tenants.error} retry={() => void tenants.refetch()} />;
  }
  return (
    <div className="toolbar">
      <label htmlFor={id}>Tenant</label>
      <select
        id={id}
        value={props.value ?? ''}
        disabled={tenants.isPending}
        onChange={(e) => props.onChange(e.target.value || undefined)}
      >
        <option value="">
          {tenants.isPending ? 'Loading tenants…' : (props.allLabel ?? 'Choose a tenant')}
        </option>
        {tenants.data?.items.map((t) => (
          <option key={t.id} value={t.id}>
            {t.display_name} ({t.slug}, {t.state})
          </option>
        ))}
      </select>
    </div>
  );
}
