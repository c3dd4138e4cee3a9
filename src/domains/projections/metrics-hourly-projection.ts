import type * as s from 'zapatos/schema';
import type { StoredEvent } from '../events/event-repository.ts';
import { alertSeverity, payloadOf } from './event-fields.ts';
import type { ChangeRow, Fold, ProjectionModule } from './projection-types.ts';

// Hourly counters (spec §2.3; docs/projections.md): alerts received, per severity, and
// investigations opened, in the UTC hour of the event.

export type MetricDelta = ChangeRow<s.metrics_hourly.JSONSelectable, 'bucket' | 'metric' | 'value'>;

const HOUR_MS = 3_600_000;

function hourBucket(at: Date): string {
  return new Date(Math.floor(at.getTime() / HOUR_MS) * HOUR_MS).toISOString();
}

class MetricsFold implements Fold<MetricDelta[]> {
  readonly #metrics = new Map<string, MetricDelta>();

  add(event: StoredEvent): void {
    if (event.type === 'investigation.opened') {
      this.#count(event.occurredAt, 'investigations.opened');
      return;
    }
    const severity = alertSeverity(payloadOf(event, 'alert.received'));
    this.#count(event.occurredAt, 'alerts.received');
    this.#count(event.occurredAt, `alerts.${severity}`);
  }

  changes(): MetricDelta[] {
    return [...this.#metrics.values()];
  }

  #count(at: Date, metric: string): void {
    const bucket = hourBucket(at);
    const key = `${metric}\n${bucket}`;
    const row = this.#metrics.get(key);
    if (row) row.value += 1;
    else this.#metrics.set(key, { bucket, metric, value: 1 });
  }
}

const METRICS = `
  INSERT INTO metrics_hourly AS m (tenant_id, bucket, metric, value)
  SELECT $1, r.bucket, r.metric, r.value
    FROM jsonb_to_recordset($2::jsonb) AS r(bucket timestamptz, metric text, value double precision)
  ON CONFLICT (tenant_id, metric, bucket) DO UPDATE SET value = m.value + excluded.value`;

export const metricsHourly: ProjectionModule<'metrics_hourly', MetricDelta[], 'metrics_hourly'> = {
  name: 'metrics_hourly',
  table: 'metrics_hourly',
  key: ['metric', 'bucket'],
  rebuild: 'delete',
  events: new Set(['investigation.opened', 'alert.received']),
  fold: () => new MetricsFold(),
  writes: [{ label: 'projections.metrics', text: METRICS, rows: (c) => [c] }],
};
