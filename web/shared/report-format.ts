// How both apps write the report figures (docs/reports.md "Figures").

/** Seconds as a reader says them: "45 s", "12 min", "3 h 05 min"; a dash for none. */
export function duration(seconds: number | null): string {
  if (seconds === null) return '–';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/** A share of 0..1 as a whole percentage; a dash when there is nothing to share. */
export function share(value: number | null): string {
  return value === null ? '–' : `${Math.round(value * 100)} %`;
}
