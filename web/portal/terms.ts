import type { Static } from 'typebox';
import type { Incident } from '../../contracts/tenant.ts';

type IncidentRow = Static<typeof Incident>;
export type Severity = IncidentRow['severity'];
export type Status = IncidentRow['status'];
export type Verdict = NonNullable<IncidentRow['verdict']>;

/** Most severe first: the order of filters, tables and the severity chart. */
export const SEVERITIES: readonly Severity[] = ['critical', 'high', 'medium', 'low', 'info'];

export const SEVERITY_LABELS: Record<Severity, string> = {
  critical: 'Critical',
  high: 'High',
  medium: 'Medium',
  low: 'Low',
  info: 'Info',
};

/**
 * Chart colours of the severities: each at least 3:1 against both the light and the dark
 * surface (WCAG non-text contrast), and never the only cue (labels say the same).
 */
export const SEVERITY_COLORS: Record<Severity, string> = {
  critical: '#dc2626',
  high: '#ea580c',
  medium: '#ca8a04',
  low: '#2563eb',
  info: '#71717a',
};

/** The pipeline's order: where an incident stands from opening to closing. */
export const STATUSES: readonly Status[] = [
  'open',
  'triaging',
  'awaiting_review',
  'resolved',
  'closed',
];

export const STATUS_LABELS: Record<Status, string> = {
  open: 'Open',
  triaging: 'Triaging',
  awaiting_review: 'Awaiting review',
  resolved: 'Resolved',
  closed: 'Closed',
};

export const VERDICT_LABELS: Record<Verdict, string> = {
  true_positive: 'True positive',
  false_positive: 'False positive',
  benign: 'Benign',
  inconclusive: 'Inconclusive',
};

/** A value of the URL's filter when it names one of `allowed`, else no filter. */
export function oneOf<T extends string>(
  allowed: readonly T[],
  value: string | null,
): T | undefined {
  return allowed.find((a) => a === value);
}
