import { useQuery } from '@tanstack/react-query';
import { ok, svc } from '../shared/api.ts';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, QueryView } from '../shared/states.tsx';
import { msspKeys } from './query-keys.ts';

const OUTCOME: Record<string, string> = {
  pending: 'Rolling out',
  applied: 'Applied',
  failed: 'Failed',
  rolled_back: 'Rolled back',
};

/**
 * A tenant's configuration revisions (docs/operations.md "Configuration revisions"), newest first,
 * read-only: changes are made through `PUT /api/mssp/tenants/{tenant_id}/config`
 * (docs/operations.md "Configuration revisions"). Shows the latest 50.
 */
export function ConfigurationSection({ tenantId }: { tenantId: string }) {
  const revisions = useQuery({
    queryKey: msspKeys.configRevisions(tenantId),
    queryFn: () =>
      ok(svc.mssp.listConfigRevisions({ params: { tenant_id: tenantId }, query: { limit: 50 } })),
  });
  return (
    <section aria-labelledby="configuration-title">
      <h2 id="configuration-title">Configuration</h2>
      <QueryView query={revisions}>
        {({ items }) =>
          items.length === 0 ? (
            <Empty title="No configuration revisions." />
          ) : (
            <ScrollTable label="Configuration revisions, newest first">
              <caption className="visually-hidden">Configuration revisions, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Revision</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">By</th>
                  <th scope="col">Requested</th>
                  <th scope="col">Completed</th>
                </tr>
              </thead>
              <tbody>
                {items.map((r) => (
                  <tr key={r.revision}>
                    <td>{r.revision}</td>
                    <td>
                      {OUTCOME[r.outcome] ?? r.outcome}
                      {r.error && <div className="hint">{r.error}</div>}
                    </td>
                    <td>{r.actor}</td>
                    <td>{new Date(r.requested_at).toLocaleString()}</td>
                    <td>{r.completed_at ? new Date(r.completed_at).toLocaleString() : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </ScrollTable>
          )
        }
      </QueryView>
    </section>
  );
}
