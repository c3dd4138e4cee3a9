import { DomainError } from '../domain-error.ts';

/**
 * An upgrade to the tenant package version the tenant already runs (spec §3.1 last paragraph:
 * an upgrade moves a tenant to another version). Refused, not recorded: a no-op rollout would
 * still restart nothing, but it would hold the tenant and answer a second request
 * `upgrade_in_progress` for no reason. Answered 409 `already_at_version`.
 */
export class AlreadyAtVersionError extends DomainError {
  override name = 'AlreadyAtVersionError';
  readonly code = 'already_at_version';
  constructor(readonly version: string) {
    super(`The tenant already runs tenant package ${version}`);
  }
}
