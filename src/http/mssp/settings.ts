import { Hono } from 'hono';
import { msspSettingsContract as contract } from '../../../contracts/mssp.ts';
import { MSSP_ROLES } from '../../auth/identity.ts';
import { type SettingsService, settingProblems } from '../../domains/settings/settings-service.ts';
import {
  InvalidSettingsError,
  SettingsChangedError,
} from '../../domains/settings/settings-types.ts';
import { implement } from '../contract.ts';
import { requireRole } from '../guards.ts';
import { ProblemError } from '../problem.ts';

function invalid(problems: { path: string; message: string }[]): ProblemError {
  return new ProblemError(422, 'invalid_settings', 'The settings cannot be applied', {
    errors: problems,
  });
}

/**
 * Before the body schema: a key outside the closed set, or a value its setting refuses, is
 * 422 `invalid_settings` naming the key (the schema alone would say 400 with no such detail).
 */
function precheck(value: unknown): void {
  const settings = (value as { settings?: unknown } | null)?.settings;
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) return;
  const problems = settingProblems(settings as Record<string, unknown>);
  if (problems.length > 0) throw invalid(problems);
}

async function problems<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (error instanceof InvalidSettingsError) throw invalid(error.problems);
    if (error instanceof SettingsChangedError)
      throw new ProblemError(409, 'settings_changed', error.message, { updated_at: error.current });
    throw error;
  }
}

/** `/api/mssp/settings`: every MSSP role reads, platform_admin writes (spec §2.2, §5.8). */
export function settingsRoutes(settings: SettingsService): Hono {
  const app = new Hono();

  implement(app, contract.getSettings, [requireRole(...MSSP_ROLES)])(async () => ({
    status: 200,
    body: await settings.read(),
  }));

  implement(app, contract.putSettings, [requireRole('platform_admin')], {
    bodyPrecheck: precheck,
  })(async (c, { body }) => ({
    status: 200,
    body: await problems(settings.update(c.get('identity').user_id, body)),
  }));

  return app;
}
