/**
 * How a call to a tenant's data-plane service (the case component, the analysis component)
 * went wrong, in the terms a job decides on: `server`, `timeout` and `unreachable` may succeed
 * on a retry; `auth` and `rejected` will not until someone changes the configuration or input.
 */
export type IntegrationErrorKind =
  /** Connection refused, DNS failure, or the outbound policy refused the address. */
  | 'unreachable'
  /** 401 or 403: the credential is wrong, expired or lacks the permission. */
  | 'auth'
  /** Any other 4xx, or a request svc refuses to send (an analyzer the service does not offer). */
  | 'rejected'
  /** 5xx, 429, or a 2xx whose body is not the protocol's shape. */
  | 'server'
  /** No complete answer within the deadline. */
  | 'timeout';

export class IntegrationError extends Error {
  override name = 'IntegrationError';
  constructor(
    readonly kind: IntegrationErrorKind,
    message: string,
    /** The HTTP status when the service answered. */
    readonly status?: number,
  ) {
    super(message);
  }

  /** Whether the same call may succeed later without a change on svc's side. */
  get retryable(): boolean {
    return this.kind === 'server' || this.kind === 'timeout' || this.kind === 'unreachable';
  }
}
