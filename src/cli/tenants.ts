import { readFile } from 'node:fs/promises';
import { createInterface, type ReadLineOptions } from 'node:readline';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Command, Option } from 'commander';
import type { Static } from 'typebox';
import Value from 'typebox/value';
import { createSvcClient, fillPath, type SvcClient } from '../../contracts/index.ts';
import { msspContract, type Tenant, TenantState } from '../../contracts/mssp.ts';
import { TenantConfig, TenantSlug } from '../../contracts/tenant-config.ts';
import { durationMs, SETTINGS } from '../config/index.ts';
import { sseMessages } from './event-stream.ts';

/**
 * `svc tenants …`: a client of a running svc over HTTP (docs/cli-tenants.md). Every action
 * goes through the API's authorization, audit and state machine, exactly as the console's do.
 */

type TenantJson = Static<typeof Tenant>;
type State = Static<typeof TenantState>;

interface LifecycleEntry {
  id: string;
  kind: string;
  from_state: string | null;
  to_state: string | null;
  step: string | null;
  details: Record<string, unknown>;
}

/** Exit 1: svc refused or the operation failed; 2: bad input, nothing sent; 124: timed out. */
class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

const POLL_MS = 2_000;
const RECONNECT_MS = 1_000;
const TENANT_STATES = TenantState.anyOf.map((s) => s.const);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function print(value: unknown): void {
  process.stdout.write(
    typeof value === 'string' ? `${value}\n` : `${JSON.stringify(value, null, 2)}\n`,
  );
}

function progress(line: string): void {
  process.stderr.write(`${line}\n`);
}

function env(name: 'SVC_URL' | 'SVC_CLI_EMAIL' | 'SVC_CLI_PASSWORD'): string | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const { schema, expected } = SETTINGS[name];
  if (!Value.Check(schema, raw)) {
    const got = name === 'SVC_CLI_PASSWORD' ? '' : `, got ${JSON.stringify(raw)}`;
    throw new CliError(2, `${name}: expected ${expected}${got}`);
  }
  return raw;
}

/** One line from stdin; on a terminal after a prompt on stderr, hidden when asked. */
async function ask(question: string, hidden: boolean): Promise<string | undefined> {
  const terminal = process.stdin.isTTY === true;
  let muted = false;
  const output = new Writable({
    write(chunk, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const options: ReadLineOptions = { input: process.stdin, terminal };
  if (terminal) options.output = output;
  const rl = createInterface(options);
  try {
    return await new Promise<string | undefined>((resolve) => {
      rl.once('close', () => resolve(undefined));
      rl.question(question, resolve);
      muted = hidden;
    });
  } finally {
    rl.close();
    if (terminal && hidden) process.stderr.write('\n');
  }
}

/** Turns a failed connection into one line naming SVC_URL instead of a stack trace. */
function reaching(baseUrl: string): typeof fetch {
  return async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (error) {
      if (init?.signal?.aborted) throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(
        1,
        `cannot reach svc at SVC_URL=${baseUrl} (${cause?.code ?? cause?.message ?? String(error)}); is it running, and is SVC_URL its address?`,
      );
    }
  };
}

/** The body of the expected status, or the problem+json as `<detail> (<code>)`. */
function expectStatus<R extends { status: number; body: unknown }, S extends R['status']>(
  res: R,
  status: S,
): Extract<R, { status: S }>['body'] {
  if (res.status === status) return res.body as Extract<R, { status: S }>['body'];
  const problem = res.body as { code?: unknown; title?: unknown; detail?: unknown } | undefined;
  if (typeof problem?.code !== 'string') {
    throw new CliError(1, `unexpected HTTP ${res.status} from svc`);
  }
  throw new CliError(1, `${problem.detail ?? problem.title} (${problem.code})`);
}

interface Session {
  svc: SvcClient;
  baseUrl: string;
  /** The svc_session cookie, in memory only, for the event stream (the client keeps its own). */
  cookie: string;
}

async function signIn(): Promise<Session> {
  const baseUrl = (env('SVC_URL') ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
  const email = env('SVC_CLI_EMAIL');
  if (!email) throw new CliError(2, 'SVC_CLI_EMAIL: expected the email of an MSSP user');
  const password = env('SVC_CLI_PASSWORD') ?? (await ask('Password: ', true));
  if (!password) throw new CliError(2, 'no password: set SVC_CLI_PASSWORD or pass it on stdin');
  const svc = createSvcClient({
    baseUrl,
    headers: { origin: new URL(baseUrl).origin },
    fetch: reaching(baseUrl),
  });
  const res = await svc.auth.login({ body: { email, password } });
  if (expectStatus(res, 200).must_change) {
    throw new CliError(
      1,
      `${email} must change its password first; sign in to the console once (password_change_required)`,
    );
  }
  return { svc, baseUrl, cookie: res.headers.get('set-cookie')?.split(';')[0] ?? '' };
}

/** Signs in, runs, and revokes the session again so none outlives the command. */
async function withSession(fn: (s: Session) => Promise<void>): Promise<void> {
  const session = await signIn();
  try {
    await fn(session);
  } finally {
    await session.svc.auth.logout().catch(() => undefined);
  }
}

function checkSlug(slug: string): void {
  if (!Value.Check(TenantSlug, slug)) {
    throw new CliError(
      2,
      `invalid slug ${JSON.stringify(slug)}: 1-56 lower-case letters, digits and hyphens, starting and ending with a letter or digit (the namespace is tenant-<slug>)`,
    );
  }
}

function checkRef(ref: string): void {
  if (!UUID.test(ref)) checkSlug(ref);
}

async function listAll(s: Session, state?: State): Promise<TenantJson[]> {
  const items: TenantJson[] = [];
  let cursor: string | undefined;
  do {
    const query = { limit: 200, ...(state ? { state } : {}), ...(cursor ? { cursor } : {}) };
    const page = expectStatus(await s.svc.mssp.listTenants({ query }), 200);
    items.push(...page.items);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  return items;
}

async function resolve(s: Session, ref: string): Promise<string> {
  if (UUID.test(ref)) return ref;
  const match = (await listAll(s)).find((t) => t.slug === ref);
  if (!match) throw new CliError(1, `No tenant has the slug ${ref} (tenant_not_found)`);
  return match.id;
}

/** The tenant with its lifecycle in id order (numeric: ids are 64-bit integers as strings). */
async function getTenant(s: Session, id: string) {
  const body = expectStatus(await s.svc.mssp.getTenant({ params: { tenant_id: id } }), 200);
  const order = (a: { id: string }, b: { id: string }) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1);
  return { ...body, lifecycle: body.lifecycle.toSorted(order) };
}

function firstLine(value: unknown): string {
  return String(value).split('\n')[0] ?? '';
}

const HINTS: ((d: Record<string, unknown>) => unknown)[] = [
  (d) => d.namespace,
  (d) => d.chart_version && `chart ${d.chart_version}`,
  (d) => (d.to ?? d.tenant_chart_version) && `to ${d.to ?? d.tenant_chart_version}`,
  (d) => d.error && firstLine(d.error),
];
const MARKS: Record<string, string> = { rolled_back: '↺', upgrade_failed: '✗' };

/** One human line per lifecycle entry: `  ✓ namespace_created (tenant-acme)`. */
function describe(e: LifecycleEntry): string {
  switch (e.kind) {
    case 'transition':
      return `  → ${e.from_state} → ${e.to_state}`;
    case 'error':
      return `  ✗ ${e.step} failed: ${e.details.message} (${e.details.code})`;
    case 'config_revision':
      return '  • configuration recorded';
    case 'step': {
      const hints = HINTS.map((h) => h(e.details)).filter((h) => typeof h === 'string' && h);
      const hint = hints.length > 0 ? ` (${hints.join(', ')})` : '';
      return `  ${MARKS[e.step ?? ''] ?? '✓'} ${e.step}${hint}`;
    }
    default:
      return `  • ${e.kind}`;
  }
}

function lifecycleEntry(data: string): LifecycleEntry {
  const { payload } = JSON.parse(data) as {
    payload: Omit<LifecycleEntry, 'id'> & { lifecycle_id: string };
  };
  return { ...payload, id: payload.lifecycle_id };
}

/**
 * Follows the tenant's event stream until aborted, resuming with Last-Event-ID after a drop.
 * A 4xx ends it: the poll beside it reports the cause.
 */
async function streamLifecycle(
  s: Session,
  tenantId: string,
  signal: AbortSignal,
  onEntry: (e: LifecycleEntry) => void,
): Promise<void> {
  const url = `${s.baseUrl}${fillPath(msspContract.tenantEvents.path, { tenant_id: tenantId })}`;
  let lastId: string | undefined;
  while (!signal.aborted) {
    try {
      const headers = { accept: 'text/event-stream', cookie: s.cookie };
      const res = await fetch(url, {
        headers: lastId ? { ...headers, 'last-event-id': lastId } : headers,
        signal,
      });
      if (res.status >= 400 && res.status < 500) {
        await res.body?.cancel();
        return;
      }
      for await (const m of res.ok && res.body ? sseMessages(res.body) : []) {
        lastId = m.id ?? lastId;
        if (m.event?.startsWith('tenant.lifecycle.')) onEntry(lifecycleEntry(m.data));
      }
    } catch {
      // The stream dropped (or was aborted): reconnect below unless we are done.
    }
    await sleep(RECONNECT_MS, undefined, { signal }).catch(() => undefined);
  }
}

/** A wait of at most `ms` that `wake()` cuts short, remembered if no wait is running yet. */
function ticker() {
  let pending = false;
  let release: (() => void) | undefined;
  return {
    wait(ms: number): Promise<void> {
      if (pending) {
        pending = false;
        return Promise.resolve();
      }
      return new Promise((done) => {
        const timer = setTimeout(() => release?.(), ms);
        release = () => {
          clearTimeout(timer);
          release = undefined;
          done();
        };
      });
    },
    wake(): void {
      if (release) release();
      else pending = true;
    },
  };
}

/** Decides from a poll: a success line, undefined to keep waiting, or a thrown CliError. */
type Goal = (tenant: TenantJson, fresh: LifecycleEntry[]) => string | undefined;

interface WaitLimit {
  ms: number;
  text: string;
}

const provisioned: Goal = (t) => {
  if (t.state === 'active') return `${t.slug} is active`;
  if (t.state === 'pending' && t.error_details) {
    const e = t.error_details;
    throw new CliError(
      1,
      `provisioning of ${t.slug} failed at step ${e.step}: ${e.message} (${e.code}); rolled back, the tenant stays pending: fix the cause, then run svc tenants retry ${t.slug}`,
    );
  }
  if (t.state === 'decommissioning' || t.state === 'soft-deleted') {
    throw new CliError(1, `${t.slug} is ${t.state}`);
  }
  return undefined;
};

const upgraded: Goal = (t, fresh) => {
  if (t.upgrade_target !== null) return undefined;
  const last = fresh.findLast((e) => e.step === 'upgraded' || e.step === 'upgrade_failed');
  if (last?.step === 'upgrade_failed') {
    throw new CliError(
      1,
      `upgrade of ${t.slug} to ${last.details.to} failed: ${firstLine(last.details.error)}; it still runs ${t.chart_version} (upgrade_failed)`,
    );
  }
  return last ? `${t.slug} runs tenant package ${t.chart_version}` : undefined;
};

/**
 * Prints lifecycle entries live from the event stream and polls the tenant every 2 s (the
 * source of truth, and the fallback when the stream is unavailable) until the goal decides.
 */
async function follow(
  s: Session,
  tenantId: string,
  goal: Goal,
  limit: WaitLimit,
  baseline: ReadonlySet<string> = new Set(),
): Promise<void> {
  const seen = new Set(baseline);
  const show = (e: LifecycleEntry) => {
    if (!seen.has(e.id)) progress(describe(e));
    seen.add(e.id);
  };
  const tick = ticker();
  let live = false;
  const stop = new AbortController();
  const stream = streamLifecycle(s, tenantId, stop.signal, (e) => {
    if (live) show(e);
    tick.wake();
  });
  const deadline = Date.now() + limit.ms;
  try {
    for (;;) {
      const { tenant, lifecycle } = await getTenant(s, tenantId);
      for (const e of lifecycle) show(e);
      live = true;
      const done = goal(
        tenant,
        lifecycle.filter((e) => !baseline.has(e.id)),
      );
      if (done) return progress(`✓ ${done}`);
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new CliError(
          124,
          `timed out after ${limit.text}; ${tenant.slug} is ${tenant.state} and svc keeps working on it (svc tenants get ${tenant.slug})`,
        );
      }
      await tick.wait(Math.min(POLL_MS, left));
    }
  } finally {
    stop.abort();
    await stream;
  }
}

function waitLimit(text: string): WaitLimit {
  try {
    return { ms: durationMs(text), text };
  } catch {
    throw new CliError(2, `--timeout ${text}: expected a duration such as 90s, 30m or 2h`);
  }
}

async function lifecycleIds(s: Session, id: string): Promise<Set<string>> {
  return new Set((await getTenant(s, id)).lifecycle.map((e) => e.id));
}

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

interface CreateOptions {
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

async function create(opts: CreateOptions): Promise<void> {
  const limit = opts.wait ? waitLimit(opts.timeout) : undefined;
  const config = await tenantConfig(opts);
  await withSession(async (s) => {
    const body = expectStatus(await s.svc.mssp.createTenant({ body: config }), 201);
    print(opts.json ? body : body.tenant.id);
    if (limit) await follow(s, body.tenant.id, provisioned, limit);
  });
}

function stateLabel(t: TenantJson): string {
  return t.state === 'pending' && t.error_details ? 'pending (failed)' : t.state;
}

function chartLabel(t: TenantJson): string {
  const current = t.chart_version ?? '-';
  return t.upgrade_target ? `${current} → ${t.upgrade_target}` : current;
}

function table(rows: string[][]): string {
  const widths = (rows[0] ?? []).map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

async function list(opts: { state?: State; json: boolean }): Promise<void> {
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

function details(t: TenantJson): string[][] {
  const e = t.error_details;
  return [
    ['id', t.id],
    ['slug', t.slug],
    ['name', t.display_name],
    ['state', stateLabel(t)],
    ['chart', chartLabel(t)],
    ...(t.edge_ports
      ? [['edge ports', `events ${t.edge_ports.events}, enrollment ${t.edge_ports.enrollment}`]]
      : []),
    ['created', t.created_at],
    ...(t.deleted_at ? [['deleted', t.deleted_at]] : []),
    ...(e ? [['error', `${e.message} (${e.code}) at step ${e.step}`]] : []),
  ];
}

async function get(ref: string, opts: { json: boolean }): Promise<void> {
  checkRef(ref);
  await withSession(async (s) => {
    const body = await getTenant(s, await resolve(s, ref));
    if (opts.json) return print(body);
    print(table(details(body.tenant)));
    print(['lifecycle:', ...body.lifecycle.map(describe)].join('\n'));
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

async function decommission(ref: string, opts: { yes: boolean; json: boolean }): Promise<void> {
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

interface WaitOptions {
  wait: boolean;
  timeout: string;
  json: boolean;
}

async function upgrade(ref: string, opts: WaitOptions & { to: string }): Promise<void> {
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

async function retry(ref: string, opts: WaitOptions): Promise<void> {
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

/** Runs an action; a CliError becomes `svc: <message>` on stderr and its exit status. */
function run<A extends unknown[]>(fn: (...args: A) => Promise<void>) {
  return async (...args: A): Promise<void> => {
    try {
      await fn(...args);
    } catch (error) {
      if (!(error instanceof CliError)) throw error;
      process.stderr.write(`svc: ${error.message}\n`);
      process.exitCode = error.exitCode;
    }
  };
}

const jsonOption = () =>
  new Option('--json', "print the API's JSON instead of text").default(false);
const waitOptions = (cmd: Command, until: string) =>
  cmd
    .option('--wait', `follow progress until ${until}`, false)
    .option('--timeout <duration>', 'give up waiting after this long (exit 124)', '30m')
    .addOption(jsonOption());

export function registerTenantCommands(program: Command): void {
  const tenants = program
    .command('tenants')
    .description(
      'Manage tenants through a running svc (SVC_URL, SVC_CLI_EMAIL, SVC_CLI_PASSWORD; docs/cli-tenants.md)',
    )
    // Usage errors (unknown option, missing argument) are bad input: exit 2, as ours are.
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));
  waitOptions(
    tenants
      .command('create')
      .description('Create a tenant; it starts pending and the orchestrator provisions it')
      .option('--slug <slug>', 'DNS label; the namespace is tenant-<slug>')
      .option('--name <display name>', 'display name')
      .option('--config <file.json|->', 'a full TenantConfig as JSON (- reads stdin)'),
    'the tenant is active',
  ).action(run(create));
  tenants
    .command('list')
    .description('List tenants, newest first')
    .addOption(new Option('--state <state>', 'only tenants in this state').choices(TENANT_STATES))
    .addOption(jsonOption())
    .action(run(list));
  tenants
    .command('get')
    .description('Show one tenant with its lifecycle history')
    .argument('<id|slug>')
    .addOption(jsonOption())
    .action(run(get));
  tenants
    .command('decommission')
    .description('Start decommissioning an active tenant (the grace period begins)')
    .argument('<id|slug>')
    .option('--yes', 'do not ask for confirmation (required when stdin is not a terminal)', false)
    .addOption(jsonOption())
    .action(run(decommission));
  waitOptions(
    tenants
      .command('upgrade')
      .description("Upgrade an active tenant's package, as the compatibility matrix allows")
      .argument('<id|slug>')
      .requiredOption('--to <version>', 'the tenant package version'),
    'the upgrade is done',
  ).action(run(upgrade));
  waitOptions(
    tenants
      .command('retry')
      .description('Retry the provisioning of a pending tenant whose last attempt failed')
      .argument('<id|slug>'),
    'the tenant is active',
  ).action(run(retry));
}
