import type { ReactNode } from 'react';
import type { Static } from 'typebox';
import type { TimelineEntry as TimelineSchema } from '../../contracts/mssp/incidents.ts';
import { Markdown } from './Markdown.tsx';
import { Empty } from './states.tsx';
import './timeline.css';

export type TimelineEntry = Static<typeof TimelineSchema>;

/** `false_positive` → `false positive`. */
export const words = (value: string) => value.replaceAll('_', ' ');
export const when = (at: string | null) => (at ? new Date(at).toLocaleString() : '—');
const str = (v: unknown): string => (typeof v === 'string' ? v : v == null ? '' : String(v));
const plural = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/**
 * The sentence for one event of an incident's stream, from its payload as the reader may see
 * it (contracts/events.ts; docs/investigations.md "Timeline"). The model's reasoning is quoted
 * as text; a note is markdown, rendered without ever producing HTML (Markdown.tsx).
 */
function describe(entry: TimelineEntry, person: (id: string) => string): ReactNode {
  const d = entry.data;
  switch (entry.type) {
    case 'investigation.opened':
      return `Opened by grouping: rule ${str(d.rule_id)} on agent ${str(d.agent_id)}, severity ${str(d.severity)}.`;
    case 'triage.started':
      return 'Triage started.';
    case 'triage.completed':
      return (
        <>
          {d.by ? `Triage by the ${str(d.by)}` : 'Triage'}: {words(str(d.verdict))}, severity{' '}
          {str(d.severity)}
          {typeof d.confidence === 'number' && `, confidence ${Math.round(d.confidence * 100)} %`}
          {d.recommended_action ? `, recommends ${str(d.recommended_action)}` : ''}.
          {d.rationale ? <blockquote>{str(d.rationale)}</blockquote> : null}
        </>
      );
    case 'triage.failed':
      return `Automatic triage failed${d.reason ? ` (${words(str(d.reason))})` : ''}; an analyst decides.`;
    case 'analyzer.completed': {
      const o = (d.observable ?? {}) as { type?: unknown; value?: unknown };
      const failed = d.success === false ? ' (the analyzer failed)' : '';
      return `${str(d.analyzer)} on ${str(o.type)} ${str(o.value)}: ${str(d.verdict)}${failed}.`;
    }
    case 'enrichment.completed': {
      const iocs = Array.isArray(d.iocs) ? d.iocs.length : 0;
      const results = Array.isArray(d.results) ? d.results.length : 0;
      const note = d.note ? ` (${str(d.note)})` : '';
      return `Enrichment: ${plural(iocs, 'indicator')}, ${plural(results, 'analyzer result')}${note}.`;
    }
    case 'decision.made':
      return `Decision: ${str(d.action)}. ${str(d.reason)}`;
    case 'review.requested':
      return `Review requested: ${words(str(d.proposed_action))}. ${str(d.rationale)}`;
    case 'review.approved':
      return `Review approved: ${words(str(d.action))}.`;
    case 'review.rejected': {
      const verdict = d.verdict ? `, verdict ${words(str(d.verdict))}` : '';
      return `Review rejected: ${words(str(d.action))}${verdict}${d.reopen ? '; back to the analysts' : ''}.`;
    }
    case 'investigation.closed':
      return `Closed as ${words(str(d.verdict))}${d.by ? ` (by ${str(d.by)})` : ''}: ${str(d.reason)}`;
    case 'case.opened':
      return `Case #${str(d.case_number)} opened.`;
    case 'action.failed':
      return `Action ${words(str(d.action))} failed: ${str(d.reason)}`;
    case 'investigation.assigned':
      return typeof d.assignee_id === 'string'
        ? `Assigned to ${person(d.assignee_id)}.`
        : 'Unassigned.';
    case 'investigation.reopened':
      return `Reopened: ${str(d.reason)}`;
    case 'investigation.severity_changed':
      return `Severity changed from ${str(d.from)} to ${str(d.to)}: ${str(d.reason)}`;
    case 'note.added':
      return <Markdown source={str(d.body)} />;
    default:
      return words(entry.type);
  }
}

/**
 * An incident's timeline, oldest first: when, who (`actor`), what. Notes are marked internal
 * or shared in words (and shared ones by a coloured edge too).
 */
export function Timeline({
  entries,
  actor,
  person = (id) => id,
}: {
  entries: TimelineEntry[];
  /** Who did it, in the reader's words. */
  actor: (entry: TimelineEntry['actor']) => string;
  /** A user id of a payload (an assignee) in words. */
  person?: (id: string) => string;
}) {
  if (entries.length === 0) return <Empty title="Nothing has happened yet." />;
  return (
    <ol className="timeline">
      {entries.map((e) => {
        const note = e.type === 'note.added';
        const shared = note && e.data.visibility === 'shared';
        return (
          <li
            key={e.seq}
            className={
              note ? `timeline-note timeline-${shared ? 'shared' : 'internal'}` : undefined
            }
          >
            <p className="timeline-head">
              <time dateTime={e.occurred_at}>{when(e.occurred_at)}</time>
              <span>{actor(e.actor)}</span>
              {note && (
                <span className="state-badge">
                  {shared ? 'Shared with the customer' : 'Internal note'}
                </span>
              )}
            </p>
            <div className="timeline-body">{describe(e, person)}</div>
          </li>
        );
      })}
    </ol>
  );
}
