import type * as s from 'zapatos/schema';
import type { StoredEvent } from '../events/event-repository.ts';
import { earlier, later, object, type PayloadObject, payloadOf, text } from './event-fields.ts';
import type { ChangeRow, Fold, ProjectionModule } from './projection-types.ts';

// Indicators seen in alerts (spec §2.3; docs/projections.md), from `alert.received`.

export type IocType = 'ip' | 'url' | 'hash';

export type IocDelta = ChangeRow<
  s.ioc_stats.JSONSelectable,
  'ioc_type' | 'ioc_value' | 'hits' | 'first_seen_at' | 'last_seen_at'
> & { ioc_type: IocType };

const IOC_MAX = 2048;

/** The indicators of one Wazuh alert, each once (contract: ip, url and file hash only). */
export function alertIocs(alert: PayloadObject): { type: IocType; value: string }[] {
  const data = object(alert.data);
  const syscheck = object(alert.syscheck);
  const found: { type: IocType; value: string | undefined }[] = [
    { type: 'ip', value: text(data?.srcip, IOC_MAX) },
    { type: 'ip', value: text(data?.dstip, IOC_MAX) },
    { type: 'url', value: text(data?.url, IOC_MAX) },
    {
      type: 'hash',
      value: text(syscheck?.sha256_after, IOC_MAX) ?? text(syscheck?.md5_after, IOC_MAX),
    },
  ];
  const seen = new Set<string>();
  const result: { type: IocType; value: string }[] = [];
  for (const { type, value } of found) {
    if (value === undefined || seen.has(`${type}\n${value}`)) continue;
    seen.add(`${type}\n${value}`);
    result.push({ type, value });
  }
  return result;
}

class IocStatsFold implements Fold<IocDelta[]> {
  readonly #iocs = new Map<string, IocDelta>();

  add(event: StoredEvent): void {
    const alert = object(payloadOf(event, 'alert.received').alert) ?? {};
    const at = event.occurredAt.toISOString();
    for (const { type, value } of alertIocs(alert)) {
      const key = `${type}\n${value}`;
      const row = this.#iocs.get(key);
      if (row) {
        row.hits += 1;
        row.first_seen_at = earlier(row.first_seen_at, at);
        row.last_seen_at = later(row.last_seen_at, at);
      } else {
        this.#iocs.set(key, {
          ioc_type: type,
          ioc_value: value,
          hits: 1,
          first_seen_at: at,
          last_seen_at: at,
        });
      }
    }
  }

  changes(): IocDelta[] {
    return [...this.#iocs.values()];
  }
}

const IOCS = `
  INSERT INTO ioc_stats AS s (tenant_id, ioc_type, ioc_value, hits, first_seen_at, last_seen_at)
  SELECT $1, r.ioc_type, r.ioc_value, r.hits, r.first_seen_at, r.last_seen_at
    FROM jsonb_to_recordset($2::jsonb) AS r(ioc_type text, ioc_value text, hits bigint,
         first_seen_at timestamptz, last_seen_at timestamptz)
  ON CONFLICT (tenant_id, ioc_type, ioc_value) DO UPDATE
     SET hits = s.hits + excluded.hits,
         first_seen_at = least(s.first_seen_at, excluded.first_seen_at),
         last_seen_at = greatest(s.last_seen_at, excluded.last_seen_at)`;

export const iocStats: ProjectionModule<'ioc_stats', IocDelta[], 'ioc_stats'> = {
  name: 'ioc_stats',
  table: 'ioc_stats',
  key: ['ioc_type', 'ioc_value'],
  rebuild: 'delete',
  events: new Set(['alert.received']),
  fold: () => new IocStatsFold(),
  writes: [{ label: 'projections.iocs', text: IOCS, rows: (c) => [c] }],
};
