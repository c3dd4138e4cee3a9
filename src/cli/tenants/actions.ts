import { readFile } from 'node:fs/promises';
import Value from 'typebox/value';
import { SuspensionBody } from '../../../contracts/mssp.ts';
import { TenantConfig } from '../../../contracts/tenant-config.ts';
import { SETTINGS } from '../../config/index.ts';
import {
  dataPlaneResumed,
  dataPlaneSuspended,
  follow,
  provisioned,
  upgraded,
  waitLimit,
} from './follow.ts';
import {
  checkRef,
  checkSlug,
  getTenant,
  lifecycleIds,
  listAll,
  resolve,
  type State,
} from './lookup.ts';
import {
  adapterDetails,
  chartLabel,
  describe,
  details,
  print,
  progress,
  stateLabel,
  table,
} from './output.ts';
import { ask, CliError, expectStatus, type Session, withSession } from './session.ts';

/** The actions of `svc tenants …`, one per subcommand. */

async function readJson(file: string): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    const text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
    value = JSON.parse(text);
  } catch (error) {
    throw new CliError(2, `--config ${file}: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CliError(2, `--config ${file}: expected a JSON object (a TenantConfig)`);
  }
  return value as Record<string, unknown>;
}

async function readStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  return text;
}

export interface CreateOptions {
  slug?: string;
  name?: string;
  config?: string;
  wait: boolean;
  timeout: string;
  json: boolean;
}

/** The file's TenantConfig with --slug/--name on top, checked against the API's schema. */
async function tenantConfig(opts: CreateOptions): Promise<TenantConfig> {
  if (opts.config === '-' && !process.env.SVC_CLI_PASSWORD) {
    throw new CliError(
      2,
      '--config - reads stdin, so the password must come from SVC_CLI_PASSWORD',
    );
  }
  const config = {
    ...(opts.config ? await readJson(opts.config) : {}),
    ...(opts.slug === undefined ? {} : { slug: opts.slug }),
    ...(opts.name === undefined ? {} : { display_name: opts.name }),
  };
  if (typeof config.slug !== 'string') {
    throw new CliError(2, 'a slug is required: --slug <slug> or "slug" in --config');
  }
  checkSlug(config.slug);
  const error = Value.Errors(TenantConfig, config)[0];
  if (error) {
    throw new CliError(
      2,
      `invalid tenant configuration: ${error.instancePath || '/'} ${error.message}`,
    );
  }
  return config as TenantConfig;
}

export async function create(opts: CreateOptions): Promise<void> {
  const limit = opts.wait ? waitLimit(opts.timeout) : undefined;
  const config = await tenantConfig(opts);
  await withSession(async (s) => {
    const body = expectStatus(await s.svc.mssp.createTenant({ body: config }), 201);
    print(opts.json ? body : body.tenant.id);
    if (limit) await follow(s, body.tenant.id, provisioned, limit);
  });
}

export async function list(opts: { state?: State; json: boolean }): Promise<void> {
  await withSession(async (s) => {
    const items = await listAll(s, opts.state);
    if (opts.json) return print({ items, next_cursor: null });
    if (items.length === 0) return progress('No tenants.');
    const header = ['ID', 'SLUG', 'STATE', 'CHART', 'CREATED'];
    const when = (iso: string) => `${iso.slice(0, 19).replace('T', ' ')}Z`;
    print(
      table([
        header,
        ...items.map((t) => [t.id, t.slug, stateLabel(t), chartLabel(t), when(t.created_at)]),
      ]),
    );
  });
}

export async function get(ref: string, opts: { json: boolean }): Promise<void> {
  checkRef(ref);
  await withSession(async (s) => {
    const body = await getTenant(s, await resolve(s, ref));
    if (opts.json) return print(body);
    print(table([...details(body.tenant), ...adapterDetails(body.adapter)]));
    print(['lifecycle:', ...body.lifecycle.map(describe)].join('\n'));
  });
}

/**
 * A tenant's incidents, newest opened first (GET /api/mssp/tenants/{id}/incidents): what its
 * alerts were grouped into (docs/ingest.md), with each one's alert count.
 */
export async function incidents(
  ref: string,
  opts: { limit: string; json: boolean },
): Promise<void> {
  checkRef(ref);
  const limit = Number(opts.limit);
  if (!/^[1-9][0-9]*$/.test(opts.limit) || limit > 200)
    throw new CliError(2, `--limit must be an integer 1-200, got ${opts.limit}`);
  await withSession(async (s) => {
    const id = await resolve(s, ref);
    const body = expectStatus(
      await s.svc.mssp.tenantIncidents({ params: { tenant_id: id }, query: { limit } }),
      200,
    );
    if (opts.json) return print(body);
    if (body.items.length === 0) return progress('No incidents.');
    const when = (iso: string | null) => (iso ? `${iso.slice(0, 19).replace('T', ' ')}Z` : '-');
    print(
      table([
        ['OPENED', 'SEVERITY', 'STATUS', 'ALERTS', 'LAST ALERT', 'TITLE'],
        ...body.items.map((i) => [
          when(i.opened_at),
          i.severity,
          i.status,
          String(i.alert_count),
          when(i.last_alert_at),
          i.title,
        ]),
      ]),
    );
    if (body.next_cursor) progress(`(the newest ${limit}; --limit up to 200 shows more)`);
  });
}

async function confirmDecommission(s: Session, id: string): Promise<void> {
  const { tenant } = await getTenant(s, id);
  const answer = await ask(
    `Decommission ${tenant.slug} (${id})? Its package, namespace and data are removed after the grace period. Type the slug to confirm: `,
    false,
  );
  if (answer?.trim() !== tenant.slug) throw new CliError(1, 'not confirmed; nothing changed');
}

export async function decommission(
  ref: string,
  opts: { yes: boolean; json: boolean },
): Promise<void> {
  checkRef(ref);
  if (!opts.yes && process.stdin.isTTY !== true) {
    throw new CliError(2, 'decommission needs --yes when stdin is not a terminal');
  }
  await withSession(async (s) => {
    const id = await resolve(s, ref);
    if (!opts.yes) await confirmDecommission(s, id);
    const body = expectStatus(await s.svc.mssp.decommission({ params: { tenant_id: id } }), 200);
    print(
      opts.json
        ? body
        : `${body.tenant.slug} is ${body.tenant.state}; svc removes it when the grace period ends`,
    );
  });
}

export interface WaitOptions {
  wait: boolean;
  timeout: string;
  json: boolean;
}

export async function upgrade(ref: string, opts: WaitOptions & { to: string }): Promise<void> {
  checkRef(ref);
  if (!Value.Check(SETTINGS.SVC_TENANT_CHART_VERSION.schema, opts.to)) {
    throw new CliError(2, `--to ${opts.to}: expected a package version such as 0.2.0`);
  }
  const limit = opts.wait ? waitLimit(opts.timeout) : undefined;
  await withSession(async (s) => {
    const id = await resolve(s, ref);
    const baseline = limit && (await lifecycleIds(s, id));
    const res = expectStatus(
      await s.svc.mssp.upgrade({
        params: { tenant_id: id },
        body: { tenant_chart_version: opts.to },
      }),
      202,
    );
    print(
      opts.json
        ? res
        : `upgrade of ${res.tenant.slug} to ${opts.to} accepted (compatibility: ${res.compatibility})`,
    );
    for (const warning of res.warnings) progress(`warning: ${warning}`);
    if (limit) await follow(s, id, upgraded, limit, baseline);
  });
}

export async function retry(ref: string, opts: WaitOptions): Promise<void> {
  checkRef(ref);
  const limit = opts.wait ? waitLimit(opts.timeout) : undefined;
  await withSession(async (s) => {
    const id = await resolve(s, ref);
    const baseline = limit && (await lifecycleIds(s, id));
    const body = expectStatus(await s.svc.mssp.retry({ params: { tenant_id: id } }), 202);
    print(opts.json ? body : `provisioning of ${body.tenant.slug} restarted`);
    if (limit) await follow(s, id, provisioned, limit, baseline);
  });
}

/** `{}` or `{reason}`, checked against the API's schema before any request (exit 2). */
function suspensionBody(reason: string | undefined): { reason?: string } {
  const body = reason === undefined ? {} : { reason };
  if (!Value.Check(SuspensionBody, body)) {
    throw new CliError(2, '--reason: expected 1-500 characters');
  }
  return body;
}

/** What `suspend` and `resume` print, and the lifecycle step `--wait` follows to. */
const SUSPENSION = {
  suspend: {
    said: (slug: string) =>
      `${slug} is suspended; its adapter and customers are refused and svc scales its workloads to zero`,
    goal: dataPlaneSuspended,
  },
  resume: {
    said: (slug: string) => `${slug} is active again; svc gives its workloads their replicas back`,
    goal: dataPlaneResumed,
  },
} as const;

async function suspension(
  action: keyof typeof SUSPENSION,
  ref: string,
  opts: WaitOptions & { reason?: string },
): Promise<void> {
  checkRef(ref);
  const body = suspensionBody(opts.reason);
  const limit = opts.wait ? waitLimit(opts.timeout) : undefined;
  await withSession(async (s) => {
    const id = await resolve(s, ref);
    const baseline = limit && (await lifecycleIds(s, id));
    const res = expectStatus(await s.svc.mssp[action]({ params: { tenant_id: id }, body }), 200);
    print(opts.json ? res : SUSPENSION[action].said(res.tenant.slug));
    if (limit) await follow(s, id, SUSPENSION[action].goal, limit, baseline);
  });
}

export const suspend = (ref: string, opts: WaitOptions & { reason?: string }) =>
  suspension('suspend', ref, opts);
export const resume = (ref: string, opts: WaitOptions & { reason?: string }) =>
  suspension('resume', ref, opts);
