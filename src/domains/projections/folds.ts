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
  const changes: Partial<Record<string, unknown>> = {};
  for (const projection of PROJECTIONS) {
    const fold = projection.fold();
    const after = checkpoints[projection.name];
    events.forEach((event, i) => {
      if ((ids[i] ?? 0n) > after && projection.events.has(event.type)) fold.add(event);
    });
    changes[projection.name] = fold.changes();
  }
  return changes as ProjectionChanges;
}
