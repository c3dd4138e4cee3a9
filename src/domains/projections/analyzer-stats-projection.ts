import type * as s from 'zapatos/schema';
import type { StoredEvent } from '../events/event-repository.ts';
import { later, payloadOf, text } from './event-fields.ts';
import type { ChangeRow, Fold, ProjectionModule } from './projection-types.ts';

// Runs, failures and time per Cortex analyzer (spec §2.3; docs/projections.md), from
// `analyzer.completed`.

export type AnalyzerDelta = ChangeRow<
  s.analyzer_stats.JSONSelectable,
  'analyzer' | 'runs' | 'failures' | 'total_duration_ms' | 'last_run_at'
>;

const ANALYZER_MAX = 200;

class AnalyzerStatsFold implements Fold<AnalyzerDelta[]> {
  readonly #analyzers = new Map<string, AnalyzerDelta>();

  add(event: StoredEvent): void {
    const payload = payloadOf(event, 'analyzer.completed');
    const name = text(payload.analyzer, ANALYZER_MAX);
    if (name === undefined) return;
    const duration = payload.duration_ms;
    const ms =
      typeof duration === 'number' && Number.isFinite(duration) && duration > 0
        ? Math.round(duration)
        : 0;
    const at = event.occurredAt.toISOString();
    const row = this.#analyzers.get(name);
    const failed = payload.success === false ? 1 : 0;
    if (row) {
      row.runs += 1;
      row.failures += failed;
      row.total_duration_ms += ms;
      row.last_run_at = later(row.last_run_at, at);
    } else {
      this.#analyzers.set(name, {
        analyzer: name,
        runs: 1,
        failures: failed,
        total_duration_ms: ms,
        last_run_at: at,
      });
    }
  }

  changes(): AnalyzerDelta[] {
    return [...this.#analyzers.values()];
  }
}

const ANALYZERS = `
  INSERT INTO analyzer_stats AS s (tenant_id, analyzer, runs, failures, total_duration_ms,
                                   last_run_at)
  SELECT $1, r.analyzer, r.runs, r.failures, r.total_duration_ms, r.last_run_at
    FROM jsonb_to_recordset($2::jsonb) AS r(analyzer text, runs bigint, failures bigint,
         total_duration_ms bigint, last_run_at timestamptz)
  ON CONFLICT (tenant_id, analyzer) DO UPDATE
     SET runs = s.runs + excluded.runs, failures = s.failures + excluded.failures,
         total_duration_ms = s.total_duration_ms + excluded.total_duration_ms,
         last_run_at = greatest(s.last_run_at, excluded.last_run_at)`;

export const analyzerStats: ProjectionModule<'analyzer_stats', AnalyzerDelta[], 'analyzer_stats'> =
  {
    name: 'analyzer_stats',
    table: 'analyzer_stats',
    key: ['analyzer'],
    rebuild: 'delete',
    events: new Set(['analyzer.completed']),
    fold: () => new AnalyzerStatsFold(),
    writes: [{ label: 'projections.analyzers', text: ANALYZERS, rows: (c) => [c] }],
  };
