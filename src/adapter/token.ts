import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log/index.ts';
import type { InternalClient } from './svc-client.ts';

/** Why no token could be had right now; the caller backs off and asks again. */
export class TokenUnavailableError extends Error {
  override name = 'TokenUnavailableError';
}

interface Held {
  token: string;
  /** Epoch ms from the JWT's `exp` (or the bootstrap answer's `expires_at`). */
  expiresAt: number;
}

/** A token this close to expiry is not used: svc would refuse it before the call lands. */
const EXPIRY_MARGIN_MS = 60_000;
/** The mounted file is re-read at most this often (the kubelet swaps it within a minute). */
const FILE_RECHECK_MS = 1_000;
const JWT = /^[A-Za-z0-9_-]+\.([A-Za-z0-9_-]+)\.[A-Za-z0-9_-]+$/;

/** `exp` (as epoch ms) and `tenant_id` of a JWT, unverified: only to skip a token svc would refuse or that is not ours. */
function claimsOf(token: string): { expiresAt?: number; tenantId?: string } {
  const payload = JWT.exec(token)?.[1];
  if (!payload) return {};
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<
      string,
      unknown
    >;
    return {
      ...(typeof claims.exp === 'number' ? { expiresAt: claims.exp * 1000 } : {}),
      ...(typeof claims.tenant_id === 'string' ? { tenantId: claims.tenant_id.toLowerCase() } : {}),
    };
  } catch {
    return {};
  }
}

export interface TokenSourceOptions {
  tenantId: string;
  bootstrapDir: string | undefined;
  tokenFile: string | undefined;
  client: InternalClient;
  logger: Logger;
  now?: () => number;
}

/**
 * The adapter's bearer token. First choice is the mounted token file (svc rewrites the Secret
 * weekly, spec §8; the kubelet swaps the mounted copy, so the file is re-read, never cached for
 * long). Without a usable file token — none yet, expired, or refused by svc — it exchanges the
 * bootstrap credential (docs/api-internal.md "Bootstrap flow") and keeps that token until 10%
 * of its lifetime is left.
 */
export function createTokenSource(options: TokenSourceOptions) {
  const { client, logger } = options;
  const now = options.now ?? Date.now;
  let fileText: string | undefined;
  let fileCheckedAt = Number.NEGATIVE_INFINITY;
  /** A file token svc answered 401 to; skipped until the file holds another one. */
  let refused: string | undefined;
  let exchanged: (Held & { refreshAt: number }) | undefined;
  let exchanging: Promise<string> | undefined;

  let fileRead: Promise<void> | undefined;

  async function readTokenFile(file: string): Promise<void> {
    let text: string | undefined;
    try {
      text = (await readFile(file, 'utf8')).trim() || undefined;
    } catch {
      text = undefined;
    }
    if (text !== fileText) {
      fileText = text;
      if (text !== undefined) logger.info({ file }, 'token file changed');
    }
  }

  async function fromFile(): Promise<string | undefined> {
    if (!options.tokenFile) return undefined;
    if (now() - fileCheckedAt >= FILE_RECHECK_MS) {
      fileCheckedAt = now();
      // Callers arriving while it is read wait for the same read, not for the stale text.
      fileRead = readTokenFile(options.tokenFile);
    }
    await fileRead;
    if (fileText === undefined || fileText === refused) return undefined;
    const claims = claimsOf(fileText);
    if (claims.tenantId !== options.tenantId) {
      // Never act for another tenant, whatever a mis-mounted Secret holds.
      refuse(fileText, 'the token file holds no token of this tenant; bootstrapping instead');
      return undefined;
    }
    if (claims.expiresAt === undefined || claims.expiresAt - EXPIRY_MARGIN_MS <= now())
      return undefined;
    return fileText;
  }

  function refuse(token: string, reason: string): void {
    if (token === refused) return;
    refused = token;
    logger.warn({ file: options.tokenFile }, reason);
  }

  async function readBootstrapFile(name: string): Promise<string> {
    if (!options.bootstrapDir) {
      throw new TokenUnavailableError(
        'no usable token file and no SVC_BOOTSTRAP_DIR to bootstrap from',
      );
    }
    const file = path.join(options.bootstrapDir, name);
    try {
      return (await readFile(file, 'utf8')).trim();
    } catch (error) {
      throw new TokenUnavailableError(
        `cannot read ${file}: ${(error as NodeJS.ErrnoException).code}`,
      );
    }
  }

  async function exchange(): Promise<string> {
    const [tenantId, credential] = await Promise.all([
      readBootstrapFile('tenant-id'),
      readBootstrapFile('credential'),
    ]);
    if (tenantId.toLowerCase() !== options.tenantId) {
      throw new TokenUnavailableError(
        `the bootstrap Secret names tenant ${tenantId}, SVC_TENANT_ID is ${options.tenantId}`,
      );
    }
    const res = await client.bootstrap({ body: { tenant_id: options.tenantId, credential } });
    if (res.status !== 200) {
      throw new TokenUnavailableError(`bootstrap refused: ${res.status} ${res.body.code}`);
    }
    const expiresAt = Date.parse(res.body.expires_at);
    const issuedAt = now();
    exchanged = {
      token: res.body.token,
      expiresAt,
      refreshAt: expiresAt - Math.max(EXPIRY_MARGIN_MS, (expiresAt - issuedAt) / 10),
    };
    logger.info({ expires_at: res.body.expires_at }, 'bootstrapped an adapter token');
    return res.body.token;
  }

  return {
    /** A token to send now; throws TokenUnavailableError or a network error when there is none. */
    async token(): Promise<string> {
      const file = await fromFile();
      if (file) return file;
      if (exchanged && now() < exchanged.refreshAt) return exchanged.token;
      exchanging ??= exchange().finally(() => {
        exchanging = undefined;
      });
      return exchanging;
    },
    /** svc answered 401 to this token: never send it again. */
    refused(token: string): void {
      if (token === fileText && token !== refused) {
        refused = token;
        logger.warn(
          { file: options.tokenFile },
          'svc refused the token file; bootstrapping instead',
        );
      }
      if (token === exchanged?.token) exchanged = undefined;
    },
  };
}

export type TokenSource = ReturnType<typeof createTokenSource>;

/**
 * Sends one svc call with the current token; a 401 marks that token refused and the call is
 * sent once more with the next one (a rewritten file, or a fresh bootstrap).
 */
export async function authorized<R extends { status: number }>(
  tokens: TokenSource,
  send: (headers: { authorization: string }) => Promise<R>,
): Promise<R> {
  const first = await tokens.token();
  const res = await send({ authorization: `Bearer ${first}` });
  if (res.status !== 401) return res;
  tokens.refused(first);
  return send({ authorization: `Bearer ${await tokens.token()}` });
}
