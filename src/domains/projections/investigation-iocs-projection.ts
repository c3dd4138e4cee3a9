import type * as s from 'zapatos/schema';
import type { EventType } from '../../../contracts/event-types.ts';
import { isUuid } from '../../../contracts/uuid.ts';
import type { StoredEvent } from '../events/event-repository.ts';
import { earlier, later, object } from './event-fields.ts';
import { alertIocs, type IocType } from './ioc-stats-projection.ts';
import type { ChangeRow, Fold, ProjectionModule } from './projection-types.ts';

// The indicators of each investigation's alerts (docs/investigations.md "IOCs and related
// incidents"), from `alert.received` with the ioc_stats extraction rule: the incident detail's
// IOCs, and the incidents sharing one, by index rather than by a scan of the event store.

export type InvestigationIocDelta = ChangeRow<
  s.investigation_iocs.JSONSelectable,
  'investigation_id' | 'ioc_type' | 'ioc_value' | 'alerts' | 'first_seen_at' | 'last_seen_at'
> & { ioc_type: IocType };

class InvestigationIocsFold implements Fold<InvestigationIocDelta[]> {
  readonly #rows = new Map<string, InvestigationIocDelta>();

  add(event: StoredEvent): void {
    const payload = object(event.payload) ?? {};
    if (!isUuid(payload.investigation_id)) return;
    const investigation = payload.investigation_id.toLowerCase();
    const alert = object(payload.alert) ?? {};
    const at = event.occurredAt.toISOString();
    for (const { type, value } of alertIocs(alert)) {
      const key = `${investigation}\n${type}\n${value}`;
      const row = this.#rows.get(key);
      if (row) {
        row.alerts += 1;
        row.first_seen_at = earlier(row.first_seen_at, at);
        row.last_seen_at = later(row.last_seen_at, at);
      } else {
        this.#rows.set(key, {
          investigation_id: investigation,
          ioc_type: type,
          ioc_value: value,
          alerts: 1,
          first_seen_at: at,
          last_seen_at: at,
        });
      }
    }
  }

  changes(): InvestigationIocDelta[] {
    return [...this.#rows.values()];
  }
}

const IOCS = `
  INSERT INTO investigation_iocs AS s (tenant_id, investigation_id, ioc_type, ioc_value, alerts,
                                       first_seen_at, last_seen_at)
  SELECT $1, r.investigation_id, r.ioc_type, r.ioc_value, r.alerts, r.first_seen_at,
         r.last_seen_at
    FROM jsonb_to_recordset($2::jsonb) AS r(investigation_id uuid, ioc_type text,
         ioc_value text, alerts bigint, first_seen_at timestamptz, last_seen_at timestamptz)
  ON CONFLICT (tenant_id, investigation_id, ioc_type, ioc_value) DO UPDATE
     SET alerts = s.alerts + excluded.alerts,
         first_seen_at = least(s.first_seen_at, excluded.first_seen_at),
         last_seen_at = greatest(s.last_seen_at, excluded.last_seen_at)`;

export const investigationIocs: ProjectionModule<
  'investigation_iocs',
  InvestigationIocDelta[],
  'investigation_iocs'
> = {
  name: 'investigation_iocs',
  table: 'investigation_iocs',
  key: ['investigation_id', 'ioc_type', 'ioc_value'],
  rebuild: 'delete',
  events: new Set<EventType>(['alert.received']),
  fold: () => new InvestigationIocsFold(),
  writes: [{ label: 'projections.investigation-iocs', text: IOCS, rows: (c) => [c] }],
};
