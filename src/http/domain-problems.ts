import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ClusterUnavailableError } from '../cluster/secrets.ts';
import {
  AdapterTenantGoneError,
  InvalidBootstrapCredentialError,
} from '../domains/adapter/adapter-types.ts';
import { InvalidBrandingError, UnknownTenantError } from '../domains/branding/branding-types.ts';
import { EnrollmentNotReadyError } from '../domains/enrollment/enrollment-types.ts';
import { IngestRateLimitedError, InvalidAlertsError } from '../domains/ingest/ingest-types.ts';
import {
  AlertNotFoundError,
  InvalidAssigneeError,
  InvestigationAlreadyClosedError,
  InvestigationNotClosedError,
  InvestigationNotFoundError,
  StaleVersionError,
} from '../domains/investigations/desk-types.ts';
import { InvalidPolicyError } from '../domains/llm/llm-types.ts';
import {
  WebhookNotFoundError,
  WebhookUrlRefusedError,
} from '../domains/notifications/notification-types.ts';
import { AlreadyAtVersionError } from '../domains/provisioning/provisioning-errors.ts';
import { InvalidReportRangeError } from '../domains/reports/report-types.ts';
import { SessionRefusedError } from '../domains/sessions/session-service.ts';
import { InvalidSettingsError, SettingsChangedError } from '../domains/settings/settings-types.ts';
import { ConfigInvalidError } from '../domains/tenants/tenant-config.ts';
import {
  ConfigNotRecordedError,
  ImmutableFieldError,
  RevisionConflictError,
  RevisionPendingError,
} from '../domains/tenants/tenant-config-service.ts';
import { IllegalTransitionError, TenantBusyError } from '../domains/tenants/tenant-lifecycle.ts';
import { TenantSuspendedError } from '../domains/tenants/tenant-suspension.ts';
import {
  ChartVersionUnknownError,
  InvalidStateError,
  SlugTakenError,
  TenancyUnavailableError,
  TenantNotFoundError,
  UpgradeInProgressError,
  UpgradeRefusedError,
} from '../domains/tenants/tenant-types.ts';
import { ReviewClosedError, ReviewNotFoundError } from '../domains/triage/triage-types.ts';
import {
  AlreadyDeactivatedError,
  CannotChangeSelfError,
  CannotResetSelfError,
  EmailConfusableError,
  EmailTakenError,
  LastPlatformAdminError,
  UserForbiddenError,
  UserNotFoundError,
  TenantNotFoundError as UserTenantNotFoundError,
} from '../domains/users/user-types.ts';
import type { Problem } from './problem.ts';
import { CLEAR_SESSION_COOKIE } from './session-cookie.ts';

/** How a refusal is answered; the problem's `code` is always the error's own (docs/errors.md). */
export interface ProblemAnswer {
  status: ContentfulStatusCode;
  title: string;
  /** Members beyond type/title/status/code/instance: `errors`, `state`, `retry_after`, … */
  extra?: Omit<Partial<Problem>, 'status' | 'code' | 'title'>;
  headers?: Record<string, string>;
}

/** An error that names its problem: every DomainError, and the infrastructure ones listed here. */
type CodedError = Error & { readonly code: string };
// biome-ignore lint/suspicious/noExplicitAny: a class of any constructor shape is a key here
type ErrorClass<E extends CodedError> = abstract new (...args: any[]) => E;
type Answer = (error: CodedError, c: Context) => ProblemAnswer;

const table = new Map<ErrorClass<CodedError>, Answer>();

function row<E extends CodedError>(
  cls: ErrorClass<E>,
  answer: (error: E, c: Context) => ProblemAnswer,
) {
  table.set(cls, answer as Answer);
}

/** The body schema is met but a rule refuses it: the same answer as a schema failure. */
const bodyRefused = (errors: unknown): ProblemAnswer => ({
  status: 400,
  title: 'Request body failed validation',
  extra: { errors },
});

// Tenants: the state machine, a missing or contended tenant, creation and upgrade refusals.
row(TenantNotFoundError, (error, c) => ({
  status: 404,
  // A customer's session can outlive its tenant's deletion by a moment (only a customer has
  // a tenant_id of its own; MSSP staff name the tenant in the path).
  title:
    c.get('identity')?.tenant_id === error.tenantId
      ? 'Your tenant no longer exists'
      : 'No such tenant',
}));
row(UserTenantNotFoundError, () => ({ status: 404, title: 'No such tenant' }));
row(UnknownTenantError, () => ({ status: 404, title: 'No such tenant' }));
row(TenantBusyError, (error) => ({ status: 409, title: error.message }));
row(IllegalTransitionError, (error) => ({
  status: 409,
  title: error.message,
  extra: { state: error.state ?? null, trigger: error.trigger },
}));
row(InvalidStateError, (error) => ({
  status: 409,
  title: error.message,
  extra: error.state === undefined ? {} : { state: error.state },
}));
row(SlugTakenError, (error) => ({ status: 409, title: error.message }));
row(EnrollmentNotReadyError, (error) => ({ status: 409, title: error.message }));
row(ConfigInvalidError, (error) =>
  error.code === 'config_invalid'
    ? { status: 422, title: 'The configuration cannot be used', extra: { errors: error.errors } }
    : bodyRefused(error.errors),
);
// Nothing was kept (the transaction rolled back): the same request can be sent again.
row(ClusterUnavailableError, (error) => ({ status: 503, title: error.message }));
row(TenancyUnavailableError, (error) => ({ status: 503, title: error.message }));
row(ChartVersionUnknownError, (error) => ({
  status: 422,
  title: error.message,
  extra: { available: error.available },
}));
row(UpgradeInProgressError, (error) => ({
  status: 409,
  title: error.message,
  extra: { upgrade_target: error.upgradeTarget },
}));
row(AlreadyAtVersionError, (error) => ({
  status: 409,
  title: error.message,
  extra: { tenant_chart_version: error.version },
}));
row(UpgradeRefusedError, (error) => ({
  status: 409,
  title: error.message,
  extra: { ...error.facts },
}));

// A tenant's configuration revisions (docs/errors.md, `PUT …/config`).
row(ImmutableFieldError, (error) => ({
  status: 422,
  title: error.message,
  extra: { errors: error.errors },
}));
row(RevisionConflictError, (error) => ({
  status: 409,
  title: error.message,
  extra: { expected_revision: error.expected, revision: error.applied },
}));
row(ConfigNotRecordedError, (error) => ({ status: 404, title: error.message }));
row(RevisionPendingError, (error) => ({
  status: 409,
  title: error.message,
  extra: { pending_revision: error.pending },
}));

// Users (spec §5.8) and sessions.
const USER_NOT_FOUND = {
  users: 'No such user',
  tenant: 'No such user in this tenant',
  mssp: 'No such MSSP user',
} as const;
row(UserNotFoundError, (error) => ({ status: 404, title: USER_NOT_FOUND[error.among] }));
row(UserForbiddenError, (error) => ({ status: 403, title: error.message }));
row(CannotResetSelfError, () => ({
  status: 409,
  title: 'Use the change-password page for your own account',
}));
row(EmailTakenError, () => ({ status: 409, title: 'A user with this email already exists' }));
row(EmailConfusableError, () => ({ status: 409, title: 'A user with a look-alike email exists' }));
row(AlreadyDeactivatedError, () => ({ status: 409, title: 'The user is already deactivated' }));
row(LastPlatformAdminError, (error) => ({ status: 409, title: error.message }));
row(CannotChangeSelfError, (error) => ({ status: 409, title: error.message }));
// docs/auth.md "Session check in the read's round trip": a changed session stays, and the same
// request sent again is checked afresh; an expired one loses its cookie.
row(SessionRefusedError, (error) =>
  error.reason === 'changed'
    ? {
        status: 503,
        title: 'Your access changed. Please retry.',
        headers: { 'Retry-After': '0' },
      }
    : {
        status: 401,
        title: 'Your session expired. Please sign in again.',
        headers: { 'Set-Cookie': CLEAR_SESSION_COOKIE },
      },
);

// Install settings, branding, triage policy, reviews.
row(InvalidSettingsError, (error) => ({
  status: 422,
  title: 'The settings cannot be applied',
  extra: { errors: error.problems },
}));
row(SettingsChangedError, (error) => ({
  status: 409,
  title: error.message,
  extra: { updated_at: error.current },
}));
row(InvalidBrandingError, (error) => ({
  status: 422,
  title: error.message,
  extra: { errors: error.problems },
}));
row(InvalidPolicyError, (error) => ({
  status: 422,
  title: error.message,
  extra: { errors: error.problems },
}));
// A report's range (docs/reports.md "Ranges"): refused before anything is read.
row(InvalidReportRangeError, (error) => ({ status: 400, title: error.message }));
row(ReviewNotFoundError, (error) => ({ status: 404, title: error.message }));
// Webhooks (docs/notifications.md): another tenant's id reads as missing.
row(WebhookNotFoundError, (error) => ({ status: 404, title: error.message }));
row(WebhookUrlRefusedError, (error) => ({
  status: 422,
  title: error.message,
  extra: { errors: [{ path: '/url', message: error.reason }] },
}));
row(ReviewClosedError, (error) => ({
  status: 409,
  title: error.message,
  extra: { decision: error.decision },
}));
// The analyst's desk (docs/investigations.md): another tenant's incident reads as missing; a
// moved stream and an illegal transition are conflicts; an assignee who may not work is 422.
row(InvestigationNotFoundError, (error) => ({ status: 404, title: error.message }));
row(AlertNotFoundError, (error) => ({ status: 404, title: error.message }));
row(StaleVersionError, (error) => ({
  status: 409,
  title: error.message,
  extra: { version: error.current },
}));
row(InvestigationAlreadyClosedError, (error) => ({
  status: 409,
  title: error.message,
  extra: { state: error.status },
}));
row(InvestigationNotClosedError, (error) => ({
  status: 409,
  title: error.message,
  extra: { state: error.status },
}));
row(InvalidAssigneeError, (error) => ({
  status: 422,
  title: error.message,
  extra: { errors: [{ path: '/assignee_id', message: error.message }] },
}));

// The adapter and ingest (docs/tokens.md, docs/ingest.md).
// One answer for an unknown tenant, a deleted one and a wrong credential: no enumeration.
row(InvalidBootstrapCredentialError, (error) => ({ status: 401, title: error.message }));
// A genuine token whose tenant is gone is refused like any other invalid token.
row(AdapterTenantGoneError, () => ({ status: 401, title: 'The token is not valid here' }));
// The adapter of a suspended tenant is told why, and nothing was written.
row(TenantSuspendedError, (error) => ({ status: 403, title: error.message }));
row(InvalidAlertsError, (error) => bodyRefused(error.problems));
row(IngestRateLimitedError, (error) => ({
  status: 429,
  title: "The tenant's alert rate limit is exhausted. Send this batch again later.",
  extra: { retry_after: error.retryAfterSeconds },
  headers: { 'Retry-After': String(error.retryAfterSeconds) },
}));

/** The row of an error's class, or of the nearest class it extends that has one. */
function answerOf(error: Error): Answer | undefined {
  for (let proto = Object.getPrototypeOf(error); proto; proto = Object.getPrototypeOf(proto)) {
    const answer = table.get(proto.constructor);
    if (answer) return answer;
  }
  return undefined;
}

/** Whether the table answers errors of this class (the architecture test's check). */
export function hasProblemRow(cls: ErrorClass<CodedError>): boolean {
  return table.has(cls);
}

/**
 * The one place a domain refusal becomes problem+json (DESIGN.md "Domain errors carry stable
 * codes, mapped to problems in one table"): routers let these errors pass, app.onError asks
 * here. Undefined for an error no row names (a bug: answered 500 `internal`).
 */
export function domainProblem(
  error: Error,
  c: Context,
): (ProblemAnswer & { code: string }) | undefined {
  const answer = answerOf(error);
  if (!answer) return undefined;
  return { code: (error as CodedError).code, ...answer(error as CodedError, c) };
}
