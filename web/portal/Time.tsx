/** An instant in the reader's local time, machine-readable in `dateTime`. */
export function Time({ at, fallback = '–' }: { at: string | null; fallback?: string }) {
  if (!at) return <>{fallback}</>;
  return <time dateTime={at}>{new Date(at).toLocaleString()}</time>;
}
