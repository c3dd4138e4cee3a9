import type { Transaction } from '../db/tenant-context.ts';

/**
 * The tenant state machine of spec §3.1, in one place. Every state change in svc goes through
 * `transition()`: a conditional UPDATE (so two actors racing cannot both move the tenant) and a
 * TenantLifecycleEvent in the same transaction. Anything not listed here is illegal and
 * surfaces as IllegalTransitionError, which the HTTP layer answers with 409
 * `illegal_transition`, never 500.
 */
export type TenantState =
  | 'pending'
  | 'provisioning'
  | 'active'
  | 'decommissioning'
  | 'soft-deleted';

export const TRANSITIONS = [
  // §3.1 row 2: namespace, bootstrap Secrets and package installed.
  { from: 'pending', to: 'provisioning', trigger: 'package_installed' },
  // §3.1 row 3: first adapter heartbeat once every package resource is Ready.
  { from: 'provisioning', to: 'active', trigger: 'adapter_heartbeat' },
  // Not in §3.1 ("outcome when provisioning exceeds its timeout: not shown"): a readiness
  // timeout is a failed step like any other: rollback, error kept, back to pending for retry.
  { from: 'provisioning', to: 'pending', trigger: 'provisioning_failed' },
  // §3.1 row 5 and 6.
  { from: 'active', to: 'decommissioning', trigger: 'decommission' },
  { from: 'decommissioning', to: 'soft-deleted', trigger: 'grace_period_ended' },
] as const satisfies ReadonlyArray<{ from: TenantState; to: TenantState; trigger: string }>;

export type Transition = (typeof TRANSITIONS)[number];
export type Trigger = Transition['trigger'];

export class IllegalTransitionError extends Error {
  override name = 'IllegalTransitionError';
  constructor(
    readonly tenantId: string,
    readonly state: TenantState | undefined,
    readonly trigger: Trigger,
  ) {
    const expected = TRANSITIONS.find((t) => t.trigger === trigger)?.from;
    super(
      state === undefined
        ? `tenant ${tenantId} does not exist`
        : `${trigger} needs a ${expected} tenant; this one is ${state}`,
    );
  }
}

export function transitionFor(trigger: Trigger): Transition {
  const found = TRANSITIONS.find((t) => t.trigger === trigger);
  if (!found) throw new TypeError(`unknown trigger ${trigger}`);
  return found;
}

export interface TransitionInput {
  tenantId: string;
  trigger: Trigger;
  /** Lifecycle `actor`: `user:<id>`, `system:orchestrator`, `adapter`. */
  actor: string;
  details?: Record<string, unknown>;
  /** Error details to keep on the tenant (null clears them). */
  errorDetails?: Record<string, unknown> | null;
}

export interface TransitionResult {
  from: TenantState;
  to: TenantState;
  stateChangedAt: Date;
  lifecycleId: string;
}

/**
 * Moves the tenant if, and only if, it is in the trigger's `from` state at commit time. The
 * caller's transaction must carry the tenant's context (the lifecycle event is RLS-bound).
 */
export async function transition(
  tx: Transaction,
  input: TransitionInput,
): Promise<TransitionResult> {
  const result = await tryTransition(tx, input);
  if (result) return result;
  const { rows } = await tx.query<{ state: TenantState }>(
    'SELECT state FROM tenants WHERE id = $1',
    [input.tenantId],
  );
  throw new IllegalTransitionError(input.tenantId, rows[0]?.state, input.trigger);
}

/** As transition(), but undefined instead of an error when the tenant is not in `from`. */
export async function tryTransition(
  tx: Transaction,
  input: TransitionInput,
): Promise<TransitionResult | undefined> {
  const { from, to } = transitionFor(input.trigger);
  const setError = input.errorDetails !== undefined;
  const { rows } = await tx.query<{ state_changed_at: Date }>(
    `UPDATE tenants
        SET state = $2, updated_at = now(),
            deleted_at = CASE WHEN $2 = 'soft-deleted' THEN now() ELSE NULL END,
            error_details = CASE WHEN $4 THEN $5::jsonb ELSE error_details END
      WHERE id = $1 AND state = $3
      RETURNING state_changed_at`,
    [input.tenantId, to, from, setError, setError ? JSON.stringify(input.errorDetails) : null],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { rows: events } = await tx.query<{ id: string }>(
    `INSERT INTO tenant_lifecycle_events (tenant_id, kind, from_state, to_state, actor, details)
     VALUES ($1, 'transition', $2, $3, $4, $5) RETURNING id::text`,
    [
      input.tenantId,
      from,
      to,
      input.actor,
      JSON.stringify({ trigger: input.trigger, ...input.details }),
    ],
  );
  return { from, to, stateChangedAt: row.state_changed_at, lifecycleId: events[0]?.id ?? '' };
}
