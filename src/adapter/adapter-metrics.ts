import { Counter, Registry } from 'prom-client';
import type { SearchPurpose } from './indexer.ts';

/**
 * The adapter's own Prometheus metrics, served at `/metrics` on its health port
 * (docs/adapter.md "Watching it"). Its own registry, like svc's (src/metrics/registry.ts), so
 * nothing leaks between instances; labels come from fixed sets only.
 */
export function createAdapterMetrics() {
  const registry = new Registry();
  const registers = [registry];
  const requests = new Counter<'purpose'>({
    name: 'svc_adapter_indexer_requests_total',
    help: 'Searches sent to the indexer, by purpose (page, unstamped, window, narrow, reread, count)',
    labelNames: ['purpose'],
    registers,
  });
  const documents = new Counter<'purpose'>({
    name: 'svc_adapter_indexer_documents_total',
    help: 'Documents the indexer returned, by purpose',
    labelNames: ['purpose'],
    registers,
  });
  const late = new Counter({
    name: 'svc_adapter_late_alerts_total',
    help: 'Alerts that became searchable later than the lateness window (SVC_LATE_WINDOW_SECONDS)',
    registers,
  });
  const recovered = new Counter<'when'>({
    name: 'svc_adapter_late_alerts_ingested_total',
    help: 'Late alerts found and stored by svc, within the lateness window or past it',
    labelNames: ['when'],
    registers,
  });
  const alerts = new Counter<'outcome'>({
    name: 'svc_adapter_alerts_total',
    help: 'Alerts posted to svc, by its answer (accepted, duplicate, refused)',
    labelNames: ['outcome'],
    registers,
  });
  return {
    search(purpose: SearchPurpose, docs: number): void {
      requests.inc({ purpose });
      if (docs > 0) documents.inc({ purpose }, docs);
    },
    late(count: number): void {
      late.inc(count);
    },
    recovered(when: 'window' | 'past_window', count: number): void {
      if (count > 0) recovered.inc({ when }, count);
    },
    alerts(outcome: 'accepted' | 'duplicate' | 'refused', count: number): void {
      if (count > 0) alerts.inc({ outcome }, count);
    },
    async scrape(): Promise<{ contentType: string; body: string }> {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}

export type AdapterMetrics = ReturnType<typeof createAdapterMetrics>;
