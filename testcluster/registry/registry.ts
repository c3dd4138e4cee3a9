// A real OCI registry for the release tests (issue 32): the CNCF distribution registry, built
// once per machine by .ci/install-registry, on loopback with TLS, where anyone may pull and only
// one user may push, as on a public GHCR package.
//
// distribution's htpasswd auth is all-or-nothing (an anonymous pull is refused too), so the
// registry runs with its `token` auth instead, the scheme GHCR and Docker Hub use: it answers
// 401 with `Bearer realm=<token server>`, the client asks the token server for the scopes it
// needs, and the registry checks the signed grant. The token server below grants `pull` to
// anyone and `push` only with the right Basic credentials; wrong credentials get 401, so
// `skopeo login` / `helm registry login` fail as they would against a real registry.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import {
  createServer as createHttpsServer,
  request as httpsRequest,
  type Server,
} from 'node:https';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { loopbackCertificate } from '../stand-ins/loopback-tls.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/** The `service` the registry names in its challenge and expects as the token's audience. */
const SERVICE = 'svc-test-registry';
const ISSUER = 'svc-test-token-server';
const KEY_ID = 'svc-test-token-key';
const TOKEN_TTL_SECONDS = 300;

export interface Registry {
  /** `127.0.0.1:<port>`: what image references and `oci://` URLs start with. */
  host: string;
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** The one account allowed to push (and to delete). */
  user: string;
  password: string;
  /** The test CA in PEM (the registry's and the token server's certificate): helm --ca-file. */
  caFile: string;
  /** A directory holding only `ca.crt`: skopeo --src-cert-dir / --dest-cert-dir. */
  certDir: string;
  /** The registry's log so far (for assertion messages). */
  output(): string;
  stop(): Promise<void>;
}

export interface StartRegistryOptions {
  /** Where the registry's files go (a fresh directory is made inside it); default the OS tmpdir. */
  dir?: string;
}

/** The registry binary: SVC_REGISTRY_BIN, else the cache .ci/install-registry fills. */
export async function registryBinary(): Promise<string> {
  if (process.env.SVC_REGISTRY_BIN) return process.env.SVC_REGISTRY_BIN;
  const { stdout } = await run('bash', [path.join(ROOT, '.ci/install-registry')], {
    cwd: ROOT,
    maxBuffer: 16 * 2 ** 20,
  });
  const bin = /^REGISTRY_BIN=(.+)$/m.exec(stdout)?.[1];
  if (!bin) throw new Error(`.ci/install-registry printed no REGISTRY_BIN:\n${stdout}`);
  return bin;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createNetServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

interface Access {
  type: string;
  name: string;
  actions: string[];
}

/** `repository:acme/svc:pull,push` → the access it asks for; the name may not hold a colon. */
function parseScope(scope: string): Access | undefined {
  const first = scope.indexOf(':');
  const last = scope.lastIndexOf(':');
  if (first <= 0 || last <= first) return undefined;
  return {
    type: scope.slice(0, first),
    name: scope.slice(first + 1, last),
    actions: scope
      .slice(last + 1)
      .split(',')
      .filter(Boolean),
  };
}

/** Anonymous callers may pull repositories; the user may do anything it asks for. */
function grant(scopes: string[], authenticated: boolean): Access[] {
  const granted: Access[] = [];
  for (const scope of scopes) {
    const wanted = parseScope(scope);
    if (!wanted) continue;
    const actions = authenticated
      ? wanted.actions
      : wanted.type === 'repository'
        ? wanted.actions.filter((a) => a === 'pull')
        : [];
    granted.push({ ...wanted, actions });
  }
  return granted;
}

async function startTokenServer(
  tls: { cert: string; key: string },
  user: string,
  password: string,
): Promise<{ server: Server; realm: string; jwks: object }> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(publicKey)), kid: KEY_ID, alg: 'ES256', use: 'sig' };

  const issue = async (scopes: string[], subject: string, authenticated: boolean) => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ access: grant(scopes, authenticated) })
      .setProtectedHeader({ alg: 'ES256', kid: KEY_ID, typ: 'JWT' })
      .setIssuer(ISSUER)
      .setSubject(subject)
      .setAudience(SERVICE)
      .setIssuedAt(now)
      .setNotBefore(now - 10)
      .setExpirationTime(now + TOKEN_TTL_SECONDS)
      .setJti(randomBytes(8).toString('hex'))
      .sign(privateKey);
    return {
      token,
      access_token: token,
      expires_in: TOKEN_TTL_SECONDS,
      issued_at: new Date(now * 1000).toISOString(),
    };
  };

  const server = createHttpsServer(tls, (req, res) => {
    const reply = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const denied = () =>
      reply(401, { errors: [{ code: 'UNAUTHORIZED', message: 'wrong user name or password' }] });
    const url = new URL(req.url ?? '/', 'https://token.invalid');
    if (url.pathname !== '/token') return reply(404, { errors: [{ code: 'NOT_FOUND' }] });

    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      void (async () => {
        if (req.method === 'GET') {
          // The Docker token protocol: optional Basic credentials, `scope` repeated.
          const header = req.headers.authorization ?? '';
          let authenticated = false;
          let subject = 'anonymous';
          if (header) {
            const basic = /^Basic (.+)$/i.exec(header);
            const [name, ...rest] = basic
              ? Buffer.from(basic[1] ?? '', 'base64')
                  .toString('utf8')
                  .split(':')
              : [];
            if (!(name === user && sameSecret(rest.join(':'), password))) return denied();
            authenticated = true;
            subject = user;
          }
          return reply(200, await issue(url.searchParams.getAll('scope'), subject, authenticated));
        }
        if (req.method === 'POST') {
          // The OAuth2 password grant some clients (oras-go, so helm) may use instead.
          const form = new URLSearchParams(body);
          if (form.get('grant_type') !== 'password')
            return reply(400, { error: 'unsupported_grant_type' });
          if (!(form.get('username') === user && sameSecret(form.get('password') ?? '', password)))
            return denied();
          const scopes = (form.get('scope') ?? '').split(' ').filter(Boolean);
          return reply(200, await issue(scopes, user, true));
        }
        return reply(405, { errors: [{ code: 'UNSUPPORTED' }] });
      })().catch((error: unknown) => reply(500, { error: String(error) }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  // A name, not the loopback IP: cosign's registry client (go-containerregistry) refuses a token
  // realm on a private/loopback address that differs from the registry's host:port. The test
  // certificate covers localhost, which /etc/hosts maps to 127.0.0.1 (the listener's address).
  return { server, realm: `https://localhost:${port}/token`, jwks: { keys: [jwk] } };
}

/**
 * Starts the registry (TLS on 127.0.0.1, a fresh port) and its token server. Anonymous pull
 * works; push needs `user`/`password`. stop() ends both and removes every file.
 */
export async function startRegistry(options: StartRegistryOptions = {}): Promise<Registry> {
  const bin = await registryBinary();
  const base = options.dir ?? tmpdir();
  await mkdir(base, { recursive: true });
  const dir = await mkdtemp(path.join(base, 'svc-registry-'));
  let child: ChildProcess | undefined;
  let tokenServer: Server | undefined;
  let output = '';

  const stop = async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child?.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    }
    if (tokenServer) {
      tokenServer.closeAllConnections();
      await new Promise<void>((resolve) => tokenServer?.close(() => resolve()));
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    const tls = await loopbackCertificate();
    const certDir = path.join(dir, 'certs');
    await mkdir(certDir);
    const caFile = path.join(certDir, 'ca.crt');
    const keyFile = path.join(dir, 'tls.key');
    await writeFile(caFile, tls.cert);
    await writeFile(keyFile, tls.key, { mode: 0o600 });

    const user = 'svc-publisher';
    const password = randomBytes(18).toString('base64url');
    const token = await startTokenServer(tls, user, password);
    tokenServer = token.server;
    const jwksFile = path.join(dir, 'jwks.json');
    await writeFile(jwksFile, JSON.stringify(token.jwks));

    const port = await freePort();
    const host = `127.0.0.1:${port}`;
    const config = path.join(dir, 'config.yml');
    // JSON is YAML: the registry reads this as its configuration file.
    await writeFile(
      config,
      JSON.stringify({
        version: 0.1,
        log: { level: 'warn', accesslog: { disabled: true } },
        storage: {
          filesystem: { rootdirectory: path.join(dir, 'data') },
          delete: { enabled: true },
        },
        http: {
          addr: host,
          secret: randomBytes(16).toString('hex'),
          tls: { certificate: caFile, key: keyFile },
        },
        auth: {
          token: {
            realm: token.realm,
            service: SERVICE,
            issuer: ISSUER,
            jwks: jwksFile,
            signingalgorithms: ['ES256'],
          },
        },
      }),
    );

    const started = spawn(bin, ['serve', config], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // No proxy settings reach the registry; it only talks to its own files.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir },
    });
    child = started;
    started.stdout?.on('data', (d) => {
      output += d;
    });
    started.stderr?.on('data', (d) => {
      output += d;
    });

    // Ready when /v2/ answers with its token challenge (401), over the test CA.
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (started.exitCode !== null)
        throw new Error(`registry exited early (${started.exitCode}):\n${output}`);
      const status = await probe(host, tls.cert);
      if (status === 401) break;
      if (Date.now() > deadline) throw new Error(`registry did not start:\n${output}`);
      await sleep(50);
    }
    return {
      host,
      url: `https://${host}`,
      user,
      password,
      caFile,
      certDir,
      output: () => output,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** GET https://<host>/v2/ trusting `ca`: its status, or 0 while nothing listens. */
async function probe(host: string, ca: string): Promise<number> {
  const [hostname, port] = host.split(':');
  return new Promise((resolve) => {
    const req = httpsRequest(
      { hostname, port: Number(port), path: '/v2/', ca, method: 'GET', timeout: 2000 },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}
