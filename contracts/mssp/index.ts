import { msspAuditContract } from './audit.ts';
import { msspBrandingContract } from './branding.ts';
import { msspConfigContract } from './config.ts';
import { msspCrossTenantContract } from './cross-tenant.ts';
import { msspEnrollmentContract } from './enrollment.ts';
import { msspFleetContract } from './fleet.ts';
import { msspImpersonationContract } from './impersonation.ts';
import { msspIncidentContract } from './incidents.ts';
import { msspLlmContract } from './llm.ts';
import { msspNotificationsContract } from './notifications.ts';
import { msspReportsContract } from './reports.ts';
import { msspSettingsContract } from './settings.ts';
import { msspTenantLifecycleContract } from './tenants.ts';
import { msspTriageContract } from './triage.ts';
import { msspUserLifecycleContract } from './user-lifecycle.ts';
import { msspUserManagementContract } from './user-management.ts';
import { msspUserContract } from './users.ts';

export { AuditRow, msspAuditContract } from './audit.ts';
export { BrandingUpdate, BrandingView, msspBrandingContract } from './branding.ts';
export { msspConfigContract } from './config.ts';
export { FleetIncident, FleetReview, msspCrossTenantContract } from './cross-tenant.ts';
export {
  EnrollmentRotation,
  EnrollmentView,
  InstallCommands,
  ManagerEndpoint,
  msspEnrollmentContract,
} from './enrollment.ts';
export { msspFleetContract } from './fleet.ts';
export { msspImpersonationContract } from './impersonation.ts';
export {
  AlertDocument,
  AlertSummary,
  IncidentDetail,
  msspIncidentContract,
  TimelineEntry,
} from './incidents.ts';
export { LlmUsageDay, msspLlmContract, TriagePolicyView } from './llm.ts';
export {
  CreatedWebhook,
  msspNotificationsContract,
  NotificationType,
  Webhook,
  WebhookAttempt,
  WebhookCreate,
  WebhookTestResult,
  WebhookUpdate,
} from './notifications.ts';
export {
  msspReportsContract,
  ReportFigures,
  ReportPeriod,
  ReportsQuery,
  TenantReportRow,
} from './reports.ts';
export { msspSettingsContract } from './settings.ts';
export {
  AdapterActivity,
  msspTenantLifecycleContract,
  SuspensionBody,
  Tenant,
  TenantState,
} from './tenants.ts';
export { Incident, msspTriageContract, PendingReview } from './triage.ts';
export { msspUserLifecycleContract } from './user-lifecycle.ts';
export { msspUserManagementContract, User } from './user-management.ts';
export { msspUserContract } from './users.ts';

/**
 * The tenant routes with the tenant-wide reads beside them (impersonation, audit, fleet), as
 * one object: the routers and the CLI address them by this name.
 */
export const msspTenantContract = {
  ...msspTenantLifecycleContract,
  ...msspImpersonationContract,
  ...msspAuditContract,
  ...msspFleetContract,
} as const;

/** `/api/mssp/*` (spec §4.2), one file per resource beside its router in src/http/mssp/. */
export const msspContract = {
  ...msspTenantContract,
  ...msspUserContract,
  ...msspUserManagementContract,
  ...msspUserLifecycleContract,
  ...msspSettingsContract,
  ...msspTriageContract,
  ...msspIncidentContract,
  ...msspCrossTenantContract,
  ...msspLlmContract,
  ...msspNotificationsContract,
  ...msspReportsContract,
  ...msspBrandingContract,
  ...msspConfigContract,
  ...msspEnrollmentContract,
} as const;
