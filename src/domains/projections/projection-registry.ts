import { analyzerStats } from './analyzer-stats-projection.ts';
import { investigationIocs } from './investigation-iocs-projection.ts';
import { investigations } from './investigations-projection.ts';
import { iocStats } from './ioc-stats-projection.ts';
import { metricsHourly } from './metrics-hourly-projection.ts';
import type { ProjectionModule } from './projection-types.ts';
import { reportInvestigations } from './report-investigations-projection.ts';
import { reportReviews } from './report-reviews-projection.ts';
import { ruleStats } from './rule-stats-projection.ts';

/**
 * Every projection, once: the folds, the batch writes, the checkpoints, the projector's "is the
 * tenant behind" question and the rebuild all walk this list, so adding a projection is its
 * module, its migration and one line here (docs/projections.md "Adding a projection";
 * test/projections/registry.test.ts fails on a projection table with no line). Writes run in
 * this order within a batch's transaction.
 */
export const PROJECTIONS = [
  investigations,
  investigationIocs,
  metricsHourly,
  ruleStats,
  iocStats,
  analyzerStats,
  reportInvestigations,
  reportReviews,
];

type Registered = (typeof PROJECTIONS)[number];
export type Projection = Registered['name'];

/** Where each projection of one tenant got to: the last event id folded (0n: none). */
export type Checkpoints = Record<Projection, bigint>;

/** One batch's row changes, per projection. */
export type ProjectionChanges = {
  [M in Registered as M['name']]: ReturnType<ReturnType<M['fold']>['changes']>;
};

/** A registered projection seen without its own change type, as the registry's walkers see it. */
export type AnyProjection = ProjectionModule<Projection, unknown>;

export const PROJECTION_NAMES: readonly Projection[] = PROJECTIONS.map((p) => p.name);

/** Checkpoints of a tenant nothing was folded for yet. */
export function noCheckpoints(): Checkpoints {
  return Object.fromEntries(PROJECTION_NAMES.map((p) => [p, 0n])) as Checkpoints;
}
