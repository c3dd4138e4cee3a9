import { InstallSettingsUpdate, InstallSettingsView } from '../install-settings.ts';
import { MSSP_ROLES, PLATFORM_ADMINS } from '../roles.ts';
import { Problem } from '../route.ts';
import { msspRoute } from './route.ts';

/** Install settings (spec §2.2, §2.4; contracts/install-settings.ts). */
export const msspSettingsContract = {
  getSettings: msspRoute('deny', {
    method: 'GET',
    path: '/api/mssp/settings',
    summary: 'The install settings: each key with its effective value and default',
    roles: MSSP_ROLES,
    responses: { 200: InstallSettingsView },
  }),
  putSettings: msspRoute('deny', {
    method: 'PUT',
    path: '/api/mssp/settings',
    summary:
      'Set some install settings (keys not named keep their value); audited as settings.update',
    roles: PLATFORM_ADMINS,
    body: InstallSettingsUpdate,
    responses: { 200: InstallSettingsView, 403: Problem, 409: Problem, 422: Problem },
  }),
} as const;
