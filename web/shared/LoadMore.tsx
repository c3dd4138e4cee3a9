import type { InfiniteData, UseInfiniteQueryResult } from '@tanstack/react-query';
import { ErrorState } from './states.tsx';

/**
 * The foot of a cursor-paginated table (docs/web.md "Adding a page" item 4): how many rows are
 * shown, announced as they grow, and a button for the next page while the API has one.
 */
export function LoadMore<P>({
  query,
  shown,
  noun,
  order = 'newest',
}: {
  query: UseInfiniteQueryResult<InfiniteData<P>>;
  shown: number;
  /** Plural, lower case: "incidents", "entries". */
  noun: string;
  /** Which end the list starts at: newest first (the default) or oldest first (a queue). */
  order?: 'newest' | 'oldest';
}) {
  return (
    <div className="load-more">
      <p className="hint" role="status">
        {query.hasNextPage
          ? `Showing the ${order} ${shown} ${noun}.`
          : `All ${shown} ${noun} shown.`}
      </p>
      {query.isFetchNextPageError && (
        <ErrorState error={query.error} retry={() => void query.fetchNextPage()} />
      )}
      {query.hasNextPage && !query.isFetchNextPageError && (
        <button
          type="button"
          aria-busy={query.isFetchingNextPage}
          disabled={query.isFetchingNextPage}
          onClick={() => void query.fetchNextPage()}
        >
          {query.isFetchingNextPage ? 'Loading…' : 'Show more'}
        </button>
      )}
    </div>
  );
}
