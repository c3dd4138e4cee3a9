// The analyst's incident list and review queue across every tenant (docs/web.md "Console pages"):
// the one place the triage domain reads past RLS, each read through the system gate with its own
// reason.
import type { KeysetPage, KeysetRequest } from '../../db/keyset.ts';
import type { SystemGate } from '../../db/system-gate.ts';
import { listFleetIncidents, listFleetOpenReviews } from './cross-tenant-repository.ts';
import type { FleetIncident, FleetIncidentFilters, FleetReview } from './triage-types.ts';

export function createCrossTenantTriageService(deps: { system: SystemGate }) {
  return {
    listIncidents(
      filters: FleetIncidentFilters,
      page: KeysetRequest,
    ): Promise<KeysetPage<FleetIncident>> {
      return deps.system.withSystem('mssp.incidents', (tx) =>
        listFleetIncidents(tx, filters, page),
      );
    },

    listOpenReviews(page: KeysetRequest): Promise<KeysetPage<FleetReview>> {
      return deps.system.withSystem('mssp.reviews', (tx) => listFleetOpenReviews(tx, page));
    },
  };
}

export type CrossTenantTriageService = ReturnType<typeof createCrossTenantTriageService>;
