import { HelmError } from '../cluster/helm.ts';
import { NamespaceConflictError, NamespaceTerminatingError } from '../cluster/namespaces.ts';
import { RenderError } from '../domains/tenants/tenant-types.ts';

/** A failure of one step, with what the operator needs to act on it (kept on the tenant). */
export class StepFailure extends Error {
  override name = 'StepFailure';
  constructor(
    readonly step: string,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** Any error of a step as the StepFailure kept on the tenant (provisioning and decommission). */
export function describeFailure(step: string, error: unknown): StepFailure {
  if (error instanceof StepFailure) return error;
  if (error instanceof RenderError)
    return new StepFailure(step, 'values_invalid', error.message, { problems: error.problems });
  if (error instanceof HelmError)
    return new StepFailure(step, error.timedOut ? 'helm_timeout' : 'helm_failed', error.message, {
      operation: error.operation,
      stderr: error.stderr,
    });
  if (error instanceof NamespaceConflictError)
    return new StepFailure(step, 'namespace_conflict', error.message);
  if (error instanceof NamespaceTerminatingError)
    return new StepFailure(step, 'namespace_terminating', error.message);
  const message = error instanceof Error ? error.message : String(error);
  return new StepFailure(step, 'step_failed', message.slice(0, 2000));
}

/** An error's message, cut to what fits in a tenant's error details. */
export function shortMessage(error: unknown, max = 500): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, max);
}
