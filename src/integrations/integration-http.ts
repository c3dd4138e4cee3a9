import { IntegrationError } from './integration-error.ts';

/**
 * The request machinery both data-plane clients (TheHive, Cortex) share: one JSON request with
 * the credential, a deadline over the whole exchange (headers and body), and every failure
 * turned into an IntegrationError.
 */

/** An API key (`Authorization: Bearer`) or a login (`Authorization: Basic`). */
export type IntegrationAuth =
  | { kind: 'bearer'; apiKey: string }
  | { kind: 'basic'; user: string; password: string };

/** What a client needs to send requests: the outbound-policy fetch in production. */
export type IntegrationFetch = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
) => Promise<Response>;

export interface JsonEndpoint {
  /** Named in error messages: `TheHive`, `Cortex`. */
  service: string;
  baseUrl: string;
  auth: IntegrationAuth;
  fetch: IntegrationFetch;
  /** Per request. */
  timeoutMs: number;
}

export type JsonRequest = (
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  /** Added to the endpoint's timeout, for requests the server itself holds (Cortex waitreport). */
  extraMs?: number,
) => Promise<unknown>;

export function authorization(auth: IntegrationAuth): string {
  if (auth.kind === 'bearer') return `Bearer ${auth.apiKey}`;
  return `Basic ${Buffer.from(`${auth.user}:${auth.password}`).toString('base64')}`;
}

/** TheHive and Cortex (both Play applications) answer errors as `{"type": ..., "message": ...}`. */
function describe(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as { type?: unknown; message?: unknown };
    if (typeof body.message === 'string')
      return `${typeof body.type === 'string' ? `${body.type}: ` : ''}${body.message}`.slice(
        0,
        300,
      );
  } catch {
    // Not JSON: a proxy's HTML page, say; its first words are still the best description.
  }
  return text.slice(0, 300) || `HTTP ${status}`;
}

function statusError(service: string, status: number, text: string): IntegrationError {
  const what = `${service} answered ${status}: ${describe(status, text)}`;
  if (status === 401 || status === 403) return new IntegrationError('auth', what, status);
  if (status === 429 || status >= 500) return new IntegrationError('server', what, status);
  return new IntegrationError('rejected', what, status);
}

function transportError(service: string, error: unknown, signal: AbortSignal): IntegrationError {
  if (error instanceof IntegrationError) return error;
  if (signal.aborted) return new IntegrationError('timeout', `${service} did not answer in time`);
  const message = error instanceof Error ? error.message : String(error);
  return new IntegrationError('unreachable', `${service} cannot be reached: ${message}`);
}

export function createJsonRequest(endpoint: JsonEndpoint): JsonRequest {
  const base = endpoint.baseUrl.replace(/\/+$/, '');
  const headers = {
    accept: 'application/json',
    authorization: authorization(endpoint.auth),
  };
  return async (method, path, body, extraMs = 0) => {
    const signal = AbortSignal.timeout(endpoint.timeoutMs + extraMs);
    try {
      const res = await endpoint.fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal,
      });
      const text = await res.text();
      if (res.status < 200 || res.status > 299)
        throw statusError(endpoint.service, res.status, text);
      if (text === '') return undefined;
      try {
        return JSON.parse(text) as unknown;
      } catch {
        throw new IntegrationError(
          'server',
          `${endpoint.service} answered ${res.status} with a body that is not JSON`,
          res.status,
        );
      }
    } catch (error) {
      throw transportError(endpoint.service, error, signal);
    }
  };
}

/** A 2xx body that is not the shape the protocol promises. */
export function malformed(service: string, what: string): IntegrationError {
  return new IntegrationError('server', `${service} answered with a malformed ${what}`);
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
