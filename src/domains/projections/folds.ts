import { isEventType } from '../../../contracts/event-types.ts';
import type { StoredEvent } from '../events/event-repository.ts';
import { type Checkpoints, PROJECTIONS, type ProjectionChanges } from './projection-registry.ts';

/**
 * The pure half of the projector: a batch of one tenant's events (ascending by id) becomes the
 * row changes of every registered projection, aggregated per key so the repository writes a
 * batch with one statement per table. Each projection folds only its own events after its own
 * checkpoint, so a projection added later catches up on its own.
 */
export function foldEvents(
  events: readonly StoredEvent[],
  checkpoints: Checkpoints,
): ProjectionChanges {
  const ids = events.map((event) => BigInt(event.id));
  // A stored type the catalog does not know (an old row) is folded by no projection.
  const types = events.map((event) => (isEventType(event.type) ? event.type : undefined));
  const changes: Partial<Record<string, unknown>> = {};
  for (const projection of PROJECTIONS) {
    const fold = projection.fold();
    const after = checkpoints[projection.name];
    events.forEach((event, i) => {
      const type = types[i];
      if (type !== undefined && (ids[i] ?? 0n) > after && projection.events.has(type))
        fold.add(event);
    });
    changes[projection.name] = fold.changes();
  }
  return changes as ProjectionChanges;
}
