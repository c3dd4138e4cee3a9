import {
  type InfiniteData,
  type UseInfiniteQueryResult,
  useInfiniteQuery,
  useMutation,
  useQueryClient,
} from '@tanstack/react-query';
import { type FormEvent, Fragment, type ReactNode, useId, useState } from 'react';
import { Link } from 'react-router-dom';
import type { Static } from 'typebox';
import type { msspContract } from '../../contracts/index.ts';
import { ok, svc } from '../shared/api.ts';
import { tenantEventsUrl, useTenantEvents } from '../shared/events.ts';
import { LoadMore } from '../shared/LoadMore.tsx';
import { Empty, ErrorState, Loading } from '../shared/states.tsx';
import { msspKeys } from './query-keys.ts';
import { TenantPicker, useTenantParam } from './TenantPicker.tsx';

type Review = Static<(typeof msspContract.tenantReviews.responses)[200]>['items'][number];
type Verdict = 'true_positive' | 'false_positive' | 'benign' | 'inconclusive';
const VERDICTS: readonly Verdict[] = ['false_positive', 'benign', 'true_positive', 'inconclusive'];

/**
 * The human-in-the-loop queue of every tenant (`GET /api/mssp/reviews`), or of the one the
 * picker narrows to: each proposed action with its rationale, risk, confidence and evidence;
 * every MSSP role may approve or reject it with a note, on the review's own tenant. Both
 * queues page with the API's cursor, oldest request first.
 */
export function ReviewsPage() {
  const [tenantId, choose] = useTenantParam();
  return (
    <section>
      <h1>Review queue</h1>
      <TenantPicker value={tenantId} onChange={choose} allLabel="All tenants" />
      {tenantId ? <TenantReviews tenantId={tenantId} /> : <AllReviews />}
    </section>
  );
}

const PAGE = 50;

function AllReviews() {
  const reviews = useInfiniteQuery({
    queryKey: msspKeys.allReviews(),
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        svc.mssp.allReviews({
          query: { limit: PAGE, ...(pageParam ? { cursor: pageParam } : {}) },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
    // Cross-tenant: no single tenant stream covers it, so it is polled, as the fleet is.
    refetchInterval: 30_000,
  });
  return (
    <ReviewList
      query={reviews}
      empty="No reviews are waiting in any tenant."
      card={(r) => (
        <ReviewCard key={r.id} tenantId={r.tenant_id} review={r} tenantSlug={r.tenant_slug} />
      )}
    />
  );
}

function TenantReviews({ tenantId }: { tenantId: string }) {
  const key = msspKeys.tenantReviews(tenantId);
  const reviews = useInfiniteQuery({
    queryKey: key,
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      ok(
        svc.mssp.tenantReviews({
          params: { tenant_id: tenantId },
          query: { limit: PAGE, ...(pageParam ? { cursor: pageParam } : {}) },
        }),
      ),
    getNextPageParam: (last) => last.next_cursor ?? undefined,
  });
  useTenantEvents(tenantEventsUrl(tenantId), [key]);
  return (
    <ReviewList
      query={reviews}
      empty="No reviews are waiting for this tenant."
      card={(r) => <ReviewCard key={r.id} tenantId={tenantId} review={r} />}
    />
  );
}

/** A queue, oldest request first, paged with the API's cursor (no cap on its length). */
function ReviewList<T extends Review>(props: {
  query: UseInfiniteQueryResult<InfiniteData<{ items: T[]; next_cursor: string | null }>>;
  empty: string;
  card: (review: T) => ReactNode;
}) {
  const { query } = props;
  if (query.isPending) return <Loading />;
  if (query.isError && !query.isFetchNextPageError) {
    return <ErrorState error={query.error} retry={() => void query.refetch()} />;
  }
  const items = query.data.pages.flatMap((p) => p.items);
  if (items.length === 0) return <Empty title={props.empty} />;
  return (
    <>
      <ul className="cards">{items.map(props.card)}</ul>
      <LoadMore query={query} shown={items.length} noun="reviews" order="oldest" />
    </>
  );
}

function ReviewCard({
  tenantId,
  review,
  tenantSlug,
}: {
  tenantId: string;
  review: Review;
  /** Shown (linking to the tenant) when the queue spans tenants. */
  tenantSlug?: string;
}) {
  const id = useId();
  const [note, setNote] = useState('');
  const [verdict, setVerdict] = useState<Verdict | ''>('');
  const [noteMissing, setNoteMissing] = useState(false);
  const queries = useQueryClient();
  const decide = useMutation({
    mutationFn: (decision: 'approve' | 'reject') => {
      const params = { tenant_id: tenantId, review_id: review.id };
      return decision === 'approve'
        ? ok(svc.mssp.approveReview({ params, body: { note: note.trim() } }))
        : ok(
            svc.mssp.rejectReview({
              params,
              body: { note: note.trim(), ...(verdict ? { verdict } : {}) },
            }),
          );
    },
    onSuccess: () => {
      // Both queues that may show it: the tenant's and the one across tenants.
      void queries.invalidateQueries({ queryKey: msspKeys.reviews() });
      void queries.invalidateQueries({ queryKey: msspKeys.fleet() });
    },
  });
  const submit = (decision: 'approve' | 'reject') => (event?: FormEvent) => {
    event?.preventDefault();
    if (!note.trim()) {
      setNoteMissing(true);
      return;
    }
    setNoteMissing(false);
    decide.mutate(decision);
  };
  const params = Object.entries(review.action_params);
  return (
    <li className="card" aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>{review.proposed_action}</h2>
      <dl className="facts">
        {tenantSlug && (
          <>
            <dt>Tenant</dt>
            <dd>
              <Link to={`/tenants/${tenantId}`}>{tenantSlug}</Link>
            </dd>
          </>
        )}
        <dt>Incident</dt>
        <dd>
          <Link to={`/tenants/${tenantId}/incidents/${review.investigation_id}`}>
            Open the incident
          </Link>
        </dd>
        <dt>Risk</dt>
        <dd>
          <span className={`severity severity-${review.risk}`}>{review.risk}</span>
        </dd>
        <dt>Confidence</dt>
        <dd>{review.confidence === null ? '—' : `${Math.round(review.confidence * 100)} %`}</dd>
        <dt>Requested</dt>
        <dd>
          {new Date(review.requested_at).toLocaleString()} by {review.requested_by}
        </dd>
        {review.expires_at && (
          <>
            <dt>Expires</dt>
            <dd>{new Date(review.expires_at).toLocaleString()}</dd>
          </>
        )}
      </dl>
      {params.length > 0 && (
        <>
          <h3>Action parameters</h3>
          <dl className="facts">
            {params.map(([k, v]) => (
              <Fragment key={k}>
                <dt>{k}</dt>
                <dd className="wrap">{typeof v === 'string' ? v : JSON.stringify(v)}</dd>
              </Fragment>
            ))}
          </dl>
        </>
      )}
      <h3>Rationale</h3>
      <p className="wrap">{review.rationale}</p>
      <details>
        <summary>Evidence</summary>
        <pre className="evidence">{JSON.stringify(review.evidence, null, 2)}</pre>
      </details>
      <form onSubmit={submit('approve')} noValidate>
        <label htmlFor={`${id}-note`}>Note</label>
        <textarea
          id={`${id}-note`}
          rows={2}
          maxLength={2000}
          required
          aria-invalid={noteMissing || undefined}
          aria-describedby={noteMissing ? `${id}-note-error` : undefined}
          value={note}
          onChange={(e) => setNote(e.target.value)}
        />
        {noteMissing && (
          <p id={`${id}-note-error`} className="field-error" role="alert">
            Write a note: it goes into the audit trail with the decision.
          </p>
        )}
        <label htmlFor={`${id}-verdict`}>Verdict if rejected (optional)</label>
        <select
          id={`${id}-verdict`}
          value={verdict}
          onChange={(e) => setVerdict(e.target.value as Verdict | '')}
        >
          <option value="">Default (false positive for a case proposal)</option>
          {VERDICTS.map((v) => (
            <option key={v} value={v}>
              {v.replace('_', ' ')}
            </option>
          ))}
        </select>
        {decide.isError && <ErrorState error={decide.error} />}
        <div className="modal-actions">
          <button type="submit" className="primary" aria-busy={decide.isPending}>
            Approve
          </button>
          <button type="button" className="danger" onClick={() => submit('reject')()}>
            Reject
          </button>
        </div>
      </form>
    </li>
  );
}
