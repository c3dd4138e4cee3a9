import { useInfiniteQuery } from '@tanstack/react-query';
import { type FormEvent, useId, useState } from 'react';
import { useSearchParams } from 'react-router-dom';
import { LoadMore } from '../shared/LoadMore.tsx';
import { ScrollTable } from '../shared/ScrollTable.tsx';
import { Empty, QueryView } from '../shared/states.tsx';
import { AUDIT_KEY, type AuditFilter, type AuditRow, auditPage } from './queries.ts';
import { Time } from './Time.tsx';

/** contracts/tenant.ts AuditQuery.action: checked here too, so a typo is a hint, not a 400. */
const ACTION = /^[a-z][a-z_.]{0,99}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/** The filters in the URL: `action` as typed, `since` as a local calendar day. */
function useAuditFilter() {
  const [params, setParams] = useSearchParams();
  const action = params.get('action') ?? '';
  const since = params.get('since') ?? '';
  const filter: AuditFilter = {
    ...(ACTION.test(action) && { action }),
    // From the start of that day in the reader's time zone.
    ...(DAY.test(since) && { since: new Date(`${since}T00:00`).toISOString() }),
  };
  const apply = (next: { action: string; since: string }) =>
    setParams(
      Object.fromEntries(Object.entries(next).filter(([, v]) => v !== '')) as Record<
        string,
        string
      >,
    );
  return { filter, action, since, apply };
}

function Filters({ audit }: { audit: ReturnType<typeof useAuditFilter> }) {
  const [action, setAction] = useState(audit.action);
  const [since, setSince] = useState(audit.since);
  const [invalid, setInvalid] = useState(false);
  const actionId = useId();
  const sinceId = useId();
  const errorId = useId();
  function submit(event: FormEvent) {
    event.preventDefault();
    const trimmed = action.trim();
    const bad = trimmed !== '' && !ACTION.test(trimmed);
    setInvalid(bad);
    if (!bad) audit.apply({ action: trimmed, since });
  }
  function clear() {
    setAction('');
    setSince('');
    setInvalid(false);
    audit.apply({ action: '', since: '' });
  }
  return (
    <search aria-label="Filter the audit trail">
      <form className="filters" onSubmit={submit}>
        <div className="filter">
          <label htmlFor={actionId}>Action</label>
          <input
            id={actionId}
            value={action}
            placeholder="user.impersonate"
            spellCheck={false}
            autoCapitalize="none"
            aria-invalid={invalid}
            aria-describedby={invalid ? errorId : undefined}
            onChange={(e) => setAction(e.target.value)}
          />
        </div>
        <div className="filter">
          <label htmlFor={sinceId}>From</label>
          <input
            id={sinceId}
            type="date"
            value={since}
            onChange={(e) => setSince(e.target.value)}
          />
        </div>
        <div className="filter-actions">
          <button type="submit">Apply</button>
          <button type="button" onClick={clear}>
            Clear
          </button>
        </div>
      </form>
      {invalid && (
        <p className="field-error" id={errorId} role="alert">
          An action is an exact name in lower case, such as user.impersonate.
        </p>
      )}
    </search>
  );
}

function json(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

function Entry({ row }: { row: AuditRow }) {
  return (
    <tr className={row.impersonated ? 'impersonated' : undefined}>
      <td>
        <Time at={row.timestamp} />
      </td>
      <td>
        {row.impersonated && <span className="tag tag-impersonation">Impersonation</span>}
        <span className="break">
          {row.actor_principal} {row.actor_id}
        </span>
        {row.impersonated && <span className="hint"> MSSP staff acting as your organisation</span>}
      </td>
      <td>
        <code>{row.action}</code>
      </td>
      <td>
        {row.resource_type}
        {row.resource_id && <code className="break"> {row.resource_id}</code>}
      </td>
      <td>
        <details>
          <summary>Details</summary>
          <dl className="fields">
            <dt>Request</dt>
            <dd>
              <code className="break">{row.request_id ?? '–'}</code>
            </dd>
            {row.before !== null && (
              <>
                <dt>Before</dt>
                <dd>
                  <pre>{json(row.before)}</pre>
                </dd>
              </>
            )}
            {row.after !== null && (
              <>
                <dt>After</dt>
                <dd>
                  <pre>{json(row.after)}</pre>
                </dd>
              </>
            )}
            {Object.keys(row.details).length > 0 && (
              <>
                <dt>More</dt>
                <dd>
                  <pre>{json(row.details)}</pre>
                </dd>
              </>
            )}
          </dl>
        </details>
      </td>
    </tr>
  );
}

/**
 * The tenant's audit trail (spec §2.6), newest first. Entries MSSP staff made while acting as
 * the tenant (`acting_as`, spec §5.8) are marked in words, not by colour alone.
 */
export function AuditPage() {
  const audit = useAuditFilter();
  const { filter } = audit;
  const entries = useInfiniteQuery({
    queryKey: [...AUDIT_KEY, filter],
    queryFn: ({ pageParam }) => auditPage(filter, pageParam),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  const filtered = filter.action !== undefined || filter.since !== undefined;
  return (
    <section>
      <h1>Audit trail</h1>
      <p className="hint">
        What was done in your organisation's account, newest first. Entries marked Impersonation
        were made by your MSSP's staff while acting as your organisation.
      </p>
      <Filters key={`${audit.action}\n${audit.since}`} audit={audit} />
      <QueryView
        query={entries}
        isEmpty={(data) => data.pages[0]?.items.length === 0}
        empty={
          <Empty title={filtered ? 'No entries match these filters.' : 'No audit entries yet.'} />
        }
      >
        {(data) => {
          const rows = data.pages.flatMap((p) => p.items);
          return (
            <>
              <ScrollTable label="Audit entries">
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Who</th>
                    <th scope="col">Action</th>
                    <th scope="col">Resource</th>
                    <th scope="col">Details</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((row) => (
                    <Entry key={row.id} row={row} />
                  ))}
                </tbody>
              </ScrollTable>
              <LoadMore query={entries} shown={rows.length} noun="entries" />
            </>
          );
        }}
      </QueryView>
    </section>
  );
}
