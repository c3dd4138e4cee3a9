import { setTimeout as delay } from 'node:timers/promises';
import { OutboundUrlError } from '../../net/outbound-url.ts';
import { LlmError, type LlmErrorKind, type ProviderSettings } from './provider.ts';

// One request to a model server with the retry policy both protocols share: a timeout per
// attempt; 429, 5xx, timeouts and connection errors retried with backoff (Retry-After wins);
// any other 4xx thrown at once. The API key travels only in the headers given here and is
// scrubbed from every error message, since servers may echo what they were sent.

const DEFAULTS = { timeoutMs: 60_000, retries: 2, backoffMs: 500, maxRetryAfterMs: 30_000 };
const MESSAGE_LIMIT = 300;

export interface ModelCall {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  /** The server's own explanation from an error body, and whether it says "overloaded". */
  describeError: (text: string) => { message: string | undefined; overloaded: boolean };
}

export interface ModelAnswer {
  status: number;
  text: string;
  attempts: number;
}

/** What went wrong in one attempt, and how long the server asked us to wait, if it did. */
interface Failure {
  kind: LlmErrorKind;
  message: string;
  status?: number;
  retryable: boolean;
  retryAfterMs?: number;
}

export async function sendWithRetry(
  settings: ProviderSettings,
  call: ModelCall,
): Promise<ModelAnswer> {
  const retries = settings.retries ?? DEFAULTS.retries;
  const sleep = settings.sleep ?? ((ms: number) => delay(ms));
  for (let attempt = 1; ; attempt++) {
    const outcome = await attemptOnce(settings, call);
    if ('text' in outcome) return { ...outcome, attempts: attempt };
    if (!outcome.retryable || attempt > retries) throw failed(settings, outcome, attempt);
    const wait = waitBefore(settings, outcome, attempt);
    if (wait === undefined) throw failed(settings, askedTooMuch(outcome), attempt);
    await sleep(wait);
  }
}

async function attemptOnce(
  settings: ProviderSettings,
  call: ModelCall,
): Promise<Omit<ModelAnswer, 'attempts'> | Failure> {
  const timeoutMs = settings.timeoutMs ?? DEFAULTS.timeoutMs;
  const signal = AbortSignal.timeout(timeoutMs);
  let response: Response;
  let text: string;
  try {
    response = await settings.fetch(call.url, {
      method: 'POST',
      headers: { ...call.headers, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(call.body),
      signal,
    });
    text = await readWithin(response, signal);
  } catch (error) {
    if (signal.aborted) {
      return { kind: 'timeout', message: `no answer within ${timeoutMs} ms`, retryable: true };
    }
    return {
      kind: 'unreachable',
      message: `cannot reach ${new URL(call.url).origin}: ${reasonOf(error)}`,
      // The outbound policy will refuse the same target again.
      retryable: !(error instanceof OutboundUrlError),
    };
  }
  if (response.ok) return { status: response.status, text };
  return httpFailure(response, call.describeError(text));
}

/**
 * The body is read under the same deadline as the headers. ProviderFetch is injected and its
 * contract only promises that it receives the signal, so the read is raced against it too.
 */
function readWithin(response: Response, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      response.body?.cancel().catch(() => {});
      reject(signal.reason);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    response
      .text()
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function httpFailure(
  response: Response,
  described: { message: string | undefined; overloaded: boolean },
): Failure {
  const status = response.status;
  const said = described.message ?? response.statusText;
  const message = `HTTP ${status}${said ? `: ${said}` : ''}`;
  const retryAfterMs = retryAfter(response.headers);
  const withWait = retryAfterMs === undefined ? {} : { retryAfterMs };
  if (status === 429)
    return { kind: 'rate_limited', message, status, retryable: true, ...withWait };
  if (status >= 500 || described.overloaded) {
    return { kind: 'server', message, status, retryable: true, ...withWait };
  }
  return { kind: 'client', message, status, retryable: false };
}

/**
 * Milliseconds the server asks us to wait: OpenAI's `retry-after-ms` first, then Retry-After
 * as delay-seconds or an HTTP date (RFC 9110 §10.2.3).
 */
function retryAfter(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The wait before the next attempt, or undefined when the server asks for more than we allow. */
function waitBefore(
  settings: ProviderSettings,
  failure: Failure,
  attempt: number,
): number | undefined {
  if (failure.retryAfterMs !== undefined) {
    const limit = settings.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs;
    return failure.retryAfterMs <= limit ? failure.retryAfterMs : undefined;
  }
  // Full jitter (uniform in [0, backoff·2^n)) keeps many workers from retrying in step.
  const ceiling = (settings.backoffMs ?? DEFAULTS.backoffMs) * 2 ** (attempt - 1);
  return Math.random() * ceiling;
}

/** The server wants a longer pause than we may take: it is throttling us, whatever the status. */
function askedTooMuch(failure: Failure): Failure {
  const seconds = Math.ceil((failure.retryAfterMs ?? 0) / 1000);
  return {
    ...failure,
    kind: 'rate_limited',
    message: `${failure.message}; asked to retry after ${seconds} s, more than allowed`,
  };
}

function failed(settings: ProviderSettings, failure: Failure, attempts: number): LlmError {
  const message = `${failure.message} (${attempts} attempt${attempts === 1 ? '' : 's'})`;
  return new LlmError(failure.kind, scrub(message, settings.apiKey), failure.status, attempts);
}

/** A usage field as a token count; servers that do not report usage count as 0. */
export function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : 0;
}

function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

function scrub(message: string, apiKey: string | undefined): string {
  const clean = apiKey ? message.replaceAll(apiKey, '[redacted]') : message;
  return clean.length > MESSAGE_LIMIT ? `${clean.slice(0, MESSAGE_LIMIT)}…` : clean;
}
