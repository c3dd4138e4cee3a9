import { Hono } from 'hono';
import { msspSettingsContract as contract } from '../../../contracts/mssp.ts';
import { type SettingsService, settingProblems } from '../../domains/settings/settings-service.ts';
import { InvalidSettingsError } from '../../domains/settings/settings-types.ts';
import { implement } from '../contract.ts';

/**
 * Before the body schema: a key outside the closed set, or a value its setting refuses, is
 * 422 `invalid_settings` naming the key (the schema alone would say 400 with no such detail).
 */
function precheck(value: unknown): void {
  const settings = (value as { settings?: unknown } | null)?.settings;
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) return;
  const problems = settingProblems(settings as Record<string, unknown>);
  if (problems.length > 0) throw new InvalidSettingsError(problems);
}

/** `/api/mssp/settings`: every MSSP role reads, platform_admin writes (spec §2.2, §5.8). */
export function settingsRoutes(settings: SettingsService): Hono {
  const app = new Hono();

  implement(
    app,
    contract.getSettings,
  )(async () => ({
    status: 200,
    body: await settings.read(),
  }));

  implement(app, contract.putSettings, [], {
    bodyPrecheck: precheck,
  })(async (c, { body }) => ({
    status: 200,
    body: await settings.update(c.get('identity').user_id, body),
  }));

  return app;
}
