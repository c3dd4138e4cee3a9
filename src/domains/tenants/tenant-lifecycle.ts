import { setTimeout as sleep } from 'node:timers/promises';
import type { TenantTx, Transaction } from '../../db/tenant-context.ts';
import { DomainError } from '../domain-error.ts';
import {
  findTenant,
  insertLifecycleEvent,
  tryTenantLock,
  updateState,
} from './tenant-repository.ts';

/**
 * The tenant state machine of spec §3.1, in one place. Every state change in svc goes through
 * `transition()`: a conditional UPDATE on the state the caller read (so two actors racing
 * cannot both move the tenant) and a TenantLifecycleEvent in the same transaction, made while
 * the caller holds the tenant's lock (`lockTenant`, the orchestrator's per-tenant advisory
 * lock). Anything not listed here is illegal and surfaces as IllegalTransitionError, which the
 * HTTP layer answers with 409 `invalid_state`, never 500.
 */
export type TenantState =
  | 'pending'
  | 'provisioning'
  | 'active'
  | 'suspended'
  | 'decommissioning'
  | 'soft-deleted';

/**
 * A soft-deleted tenant still exists (its row and history stay until the purge) but takes no
 * new work: it cannot be entered (impersonation) or given users.
 */
export function isLive(tenant: { state: TenantState }): boolean {
  return tenant.state !== 'soft-deleted';
}

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
  // Not in §3.1: a tenant that never became active can be removed too, without a grace
  // period, also after it failed on a namespace svc does not own, which svc then leaves
  // untouched (docs/orchestrator.md "Decommission and purge").
  { from: 'pending', to: 'decommissioning', trigger: 'decommission' },
  { from: 'provisioning', to: 'decommissioning', trigger: 'decommission' },
  { from: 'decommissioning', to: 'soft-deleted', trigger: 'grace_period_ended' },
  // §3.1 leaves suspension "not shown" (docs/operations.md "Suspension"): only a running
  // tenant can be paused, and only back to running; a suspended customer can still be let go
  // (with the grace period).
  { from: 'active', to: 'suspended', trigger: 'suspend' },
  { from: 'suspended', to: 'active', trigger: 'resume' },
  { from: 'suspended', to: 'decommissioning', trigger: 'decommission' },
] as const satisfies ReadonlyArray<{ from: TenantState; to: TenantState; trigger: string }>;

export type Transition = (typeof TRANSITIONS)[number];
export type Trigger = Transition['trigger'];

export class IllegalTransitionError extends DomainError {
  override name = 'IllegalTransitionError';
  readonly code = 'invalid_state';
  constructor(
    readonly tenantId: string,
    readonly state: TenantState | undefined,
    readonly trigger: Trigger,
  ) {
    const expected = TRANSITIONS.filter((t) => t.trigger === trigger).map((t) => t.from);
    super(
      state === undefined
        ? `tenant ${tenantId} does not exist`
        : `${trigger} needs a ${expected.join(' or ')} tenant; this one is ${state}`,
    );
  }
}

/** The transition `trigger` makes from `from`; without `from`, the trigger's only one. */
export function transitionFor(trigger: Trigger, from?: TenantState): Transition | undefined {
  const matches = TRANSITIONS.filter((t) => t.trigger === trigger);
  if (matches.length === 0) throw new TypeError(`unknown trigger ${trigger}`);
  if (from === undefined) {
    if (matches.length > 1) throw new TypeError(`${trigger} starts from several states: pass from`);
    return matches[0];
  }
  return matches.find((t) => t.from === from);
}

/**
 * Another actor holds the tenant (the orchestrator working on it: a provisioning attempt, the
 * readiness wait, a rollback, an upgrade, a decommission, a repair). Answered 409 `tenant_busy`.
 */
export class TenantBusyError extends DomainError {
  override name = 'TenantBusyError';
  readonly code = 'tenant_busy';
  constructor(readonly tenantId: string) {
    super(`svc is working on tenant ${tenantId} right now; try again when it is done`);
  }
}

/** The per-tenant advisory lock's key (orchestrator.ts takes it per session, lockTenant per transaction). */
export const TENANT_LOCK_KEY = 'hashtextextended($1, 0)';
export const tenantLockName = (tenantId: string) => `svc.tenant:${tenantId}`;

/**
 * Takes the tenant's lock for the rest of the caller's transaction, waiting up to `waitMs` for
 * an orchestrator pass that holds it briefly (a poll, a token refresh, a reconcile check).
 * False when it stays held: the caller must not move the tenant then.
 */
export async function lockTenant(tx: Transaction, tenantId: string, waitMs = 0): Promise<boolean> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    if (await tryTenantLock(tx, TENANT_LOCK_KEY, tenantLockName(tenantId))) return true;
    if (Date.now() >= deadline) return false;
    await sleep(100);
  }
}

/** How long an API call waits for the tenant's lock before answering `tenant_busy`. */
export const API_LOCK_WAIT_MS = 3_000;

/** lockTenant for API handlers: throws TenantBusyError instead of returning false. */
export async function lockTenantOrBusy(tx: Transaction, tenantId: string): Promise<void> {
  if (!(await lockTenant(tx, tenantId, API_LOCK_WAIT_MS))) throw new TenantBusyError(tenantId);
}

export interface TransitionInput {
  tenantId: string;
  trigger: Trigger;
  /**
   * The state the caller read (compare-and-set); needed when the trigger starts from several
   * states (`decommission`).
   */
  from?: TenantState;
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
 * Moves the tenant if, and only if, it is in the transition's `from` state at commit time. The
 * caller's transaction must carry the tenant's context (the lifecycle event is RLS-bound).
 */
export async function transition(tx: TenantTx, input: TransitionInput): Promise<TransitionResult> {
  const result = await tryTransition(tx, input);
  if (result) return result;
  const tenant = await findTenant(tx, input.tenantId);
  throw new IllegalTransitionError(input.tenantId, tenant?.state, input.trigger);
}

/** As transition(), but undefined instead of an error when the tenant is not in `from`. */
export async function tryTransition(
  tx: TenantTx,
  input: TransitionInput,
): Promise<TransitionResult | undefined> {
  const found = transitionFor(input.trigger, input.from);
  if (!found) return undefined;
  const { from, to } = found;
  const moved = await updateState(tx, {
    id: input.tenantId,
    from,
    to,
    errorDetails: input.errorDetails,
  });
  if (!moved) return undefined;
  const lifecycleId = await insertLifecycleEvent(tx, input.tenantId, {
    kind: 'transition',
    from_state: from,
    to_state: to,
    actor: input.actor,
    details: { trigger: input.trigger, ...input.details },
  });
  return { from, to, stateChangedAt: moved.state_changed_at, lifecycleId };
}
