import { createInterface, type ReadLineOptions } from 'node:readline';
import { Writable } from 'node:stream';
import Value from 'typebox/value';
import { createSvcClient, type SvcClient } from '../../../contracts/index.ts';
import { SETTINGS } from '../../config/index.ts';

/** Signing in to a running svc as an MSSP user, and the CLI's own error with its exit status. */

/** Exit 1: svc refused or the operation failed; 2: bad input, nothing sent; 124: timed out. */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
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
export async function ask(question: string, hidden: boolean): Promise<string | undefined> {
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
export function expectStatus<R extends { status: number; body: unknown }, S extends R['status']>(
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

export interface Session {
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
export async function withSession(fn: (s: Session) => Promise<void>): Promise<void> {
  const session = await signIn();
  try {
    await fn(session);
  } finally {
    await session.svc.auth.logout().catch(() => undefined);
  }
}
