import type { UseQueryResult } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { ApiError, NetworkError } from './api.ts';
import { NETWORK_ERROR, NOT_ALLOWED, SERVER_ERROR } from './texts.ts';

/** While data loads: announced politely, never a blank page. */
export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="state state-loading" role="status">
      {label}
    </p>
  );
}

/** A list or page with nothing in it yet, saying what would appear here. */
export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="state state-empty">
      <p className="state-title">{title}</p>
      {children}
    </div>
  );
}

/** What the reader can do about an error: the right text for its kind, and a retry. */
export function errorText(error: unknown): string {
  if (error instanceof NetworkError) return NETWORK_ERROR;
  if (error instanceof ApiError && error.status === 403) return NOT_ALLOWED;
  if (error instanceof ApiError && error.status < 500) return error.problem.title;
  return SERVER_ERROR;
}

export function ErrorState({ error, retry }: { error: unknown; retry?: () => void }) {
  return (
    <div className="state state-error" role="alert">
      <p>{errorText(error)}</p>
      {retry && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

/**
 * The three states of a query in one place: loading, error (with retry), and the data, or
 * `empty` when `isEmpty` says there is nothing to show.
 */
export function QueryView<T>(props: {
  query: UseQueryResult<T>;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}) {
  const { query } = props;
  if (query.isPending) return <Loading />;
  if (query.isError) return <ErrorState error={query.error} retry={() => void query.refetch()} />;
  if (props.isEmpty?.(query.data)) return props.empty ?? <Empty title="Nothing here yet." />;
  return props.children(query.data);
}
