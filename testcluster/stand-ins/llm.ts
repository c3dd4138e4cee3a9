import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * A local server speaking both LLM wire protocols the providers use (DESIGN "a third-party
 * service that cannot be reached ... is replaced by a local HTTP server speaking its real
 * protocol"): OpenAI chat completions at `POST /v1/chat/completions` and Anthropic's Messages
 * API at `POST /v1/messages`, with their response and error shapes, status codes and
 * Retry-After headers. The answer text comes from `respond` (default: a valid triage verdict);
 * scripted faults are consumed one per request before normal answers; every request is kept.
 */

export type LlmProtocol = 'openai' | 'anthropic';

export interface LlmStandInRequest {
  protocol: LlmProtocol;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** When the request arrived (Date.now()), to measure waits between attempts. */
  receivedAt: number;
}

/**
 * One scripted fault. `status` answers with that status in the protocol's error shape (or with
 * `body` verbatim when given); `body` alone answers 200 with that raw text; `delayMs` holds the
 * answer back that long (then answers normally unless `status`/`body` say otherwise).
 */
export interface LlmFault {
  status?: number;
  retryAfter?: string;
  message?: string;
  body?: string;
  delayMs?: number;
}

export interface LlmStandInOptions {
  /** Added before every answer, as a model's generation time would be. */
  latencyMs?: number;
  /** When set, requests must carry this key (Bearer or x-api-key) or get the protocol's 401. */
  apiKey?: string;
  /** At most this many requests generate at once; the rest wait, as on a saturated server. */
  concurrency?: number;
  /** Serve HTTPS with this certificate (LLM base URLs are https:// only in svc's settings). */
  tls?: { cert: string; key: string };
}

export interface LlmStandIn {
  /** `http://127.0.0.1:<port>`: the Anthropic base URL. */
  url: string;
  /** `<url>/v1`: the OpenAI-compatible base URL. */
  openaiBaseUrl: string;
  /** Every request received, in order (faulted ones included). */
  requests: LlmStandInRequest[];
  /** Requests generating right now, and the most seen at once. */
  stats(): { inFlight: number; peakInFlight: number };
  respond(fn: (request: LlmStandInRequest) => string | Promise<string>): void;
  fail(faults: LlmFault[]): void;
  close(): Promise<void>;
}

export const DEFAULT_TRIAGE_ANSWER = JSON.stringify({
  verdict: 'false_positive',
  severity: 'low',
  confidence: 0.9,
  rationale: 'Routine activity matching a known benign pattern.',
});

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const OPENAI_ERROR_TYPES: Record<number, { type: string; code: string | null }> = {
  400: { type: 'invalid_request_error', code: null },
  401: { type: 'invalid_request_error', code: 'invalid_api_key' },
  404: { type: 'invalid_request_error', code: 'model_not_found' },
  429: { type: 'requests', code: 'rate_limit_exceeded' },
};

function errorBody(protocol: LlmProtocol, status: number, message: string): unknown {
  if (protocol === 'anthropic') {
    return {
      type: 'error',
      error: { type: ANTHROPIC_ERROR_TYPES[status] ?? 'api_error', message },
    };
  }
  const kind = OPENAI_ERROR_TYPES[status] ?? { type: 'server_error', code: null };
  return { error: { message, type: kind.type, param: null, code: kind.code } };
}

/** Roughly what a tokenizer would count: four characters a token. */
function tokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function promptText(protocol: LlmProtocol, body: Record<string, unknown>): string {
  const messages = Array.isArray(body.messages)
    ? (body.messages as Array<{ content?: unknown }>)
    : [];
  const parts = messages.map((m) => (typeof m.content === 'string' ? m.content : ''));
  if (protocol === 'anthropic' && typeof body.system === 'string') parts.unshift(body.system);
  return parts.join('\n');
}

function answerBody(protocol: LlmProtocol, body: Record<string, unknown>, text: string): unknown {
  const model = String(body.model);
  const input = tokens(promptText(protocol, body));
  const output = tokens(text);
  if (protocol === 'anthropic') {
    return {
      id: `msg_${randomBytes(12).toString('hex')}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: input, output_tokens: output },
    };
  }
  return {
    id: `chatcmpl-${randomBytes(12).toString('hex')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output },
  };
}

/** What the real APIs refuse before generating: a wrong key, a missing header or field. */
function refusal(
  protocol: LlmProtocol,
  req: http.IncomingMessage,
  body: Record<string, unknown>,
  apiKey: string | undefined,
): { status: number; message: string } | undefined {
  if (protocol === 'anthropic') {
    if (apiKey !== undefined && req.headers['x-api-key'] !== apiKey) {
      return { status: 401, message: 'invalid x-api-key' };
    }
    if (!req.headers['anthropic-version']) {
      return { status: 400, message: 'anthropic-version: header is required' };
    }
    if (typeof body.max_tokens !== 'number') {
      return { status: 400, message: 'max_tokens: Field required' };
    }
  } else if (apiKey !== undefined && req.headers.authorization !== `Bearer ${apiKey}`) {
    // OpenAI shows only the ends of a wrong key.
    const sent = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
    return {
      status: 401,
      message: `Incorrect API key provided: ${sent.slice(0, 3)}***${sent.slice(-4)}.`,
    };
  }
  if (typeof body.model !== 'string' || !Array.isArray(body.messages)) {
    return { status: 400, message: 'model and messages are required' };
  }
  return undefined;
}

export async function startLlmStandIn(options: LlmStandInOptions = {}): Promise<LlmStandIn> {
  const requests: LlmStandInRequest[] = [];
  const faults: LlmFault[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const waiting: Array<() => void> = [];
  let respond: (request: LlmStandInRequest) => string | Promise<string> = () =>
    DEFAULT_TRIAGE_ANSWER;
  let inFlight = 0;
  let peakInFlight = 0;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      if (ms <= 0) return resolve();
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  /** Holds a request until a generation slot is free (only with `concurrency`). */
  async function generate<T>(work: () => Promise<T>): Promise<T> {
    while (options.concurrency !== undefined && inFlight >= options.concurrency) {
      await new Promise<void>((resolve) => waiting.push(resolve));
    }
    inFlight += 1;
    peakInFlight = Math.max(peakInFlight, inFlight);
    try {
      return await work();
    } finally {
      inFlight -= 1;
      waiting.shift()?.();
    }
  }

  async function handle(
    protocol: LlmProtocol,
    req: http.IncomingMessage,
    raw: string,
  ): Promise<{ status: number; headers?: Record<string, string>; body: string }> {
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return {
        status: 400,
        body: JSON.stringify(errorBody(protocol, 400, 'The request body is not valid JSON.')),
      };
    }
    const request = { protocol, headers: req.headers, body, receivedAt: Date.now() };
    requests.push(request);
    const fault = faults.shift();
    const refused = refusal(protocol, req, body, options.apiKey);
    const refusedAnswer = refused && {
      status: refused.status,
      body: JSON.stringify(errorBody(protocol, refused.status, refused.message)),
    };
    // Real servers refuse a bad key or request at once, before any generation time.
    if (refusedAnswer && fault === undefined) return refusedAnswer;
    const received = performance.now();
    return generate(async () => {
      await pause((options.latencyMs ?? 0) + (fault?.delayMs ?? 0));
      if (fault?.status !== undefined || fault?.body !== undefined) {
        const status = fault.status ?? 200;
        const message = fault.message ?? `simulated HTTP ${status}`;
        return {
          status,
          ...(fault.retryAfter === undefined
            ? {}
            : { headers: { 'retry-after': fault.retryAfter } }),
          body: fault.body ?? JSON.stringify(errorBody(protocol, status, message)),
        };
      }
      if (refusedAnswer) return refusedAnswer;
      const text = await respond(request);
      // As OpenAI does: the server's own time on the request, waiting for a slot included.
      const processing = String(Math.round(performance.now() - received));
      return {
        status: 200,
        ...(protocol === 'openai' ? { headers: { 'openai-processing-ms': processing } } : {}),
        body: JSON.stringify(answerBody(protocol, body, text)),
      };
    });
  }

  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      const protocol: LlmProtocol | undefined =
        path === '/v1/chat/completions'
          ? 'openai'
          : path === '/v1/messages'
            ? 'anthropic'
            : undefined;
      const reply = (status: number, headers: Record<string, string>, body: string) => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(body);
      };
      if (!protocol || req.method !== 'POST') {
        const message = `Unknown request URL: ${req.method} ${path}.`;
        return reply(404, {}, JSON.stringify(errorBody('openai', 404, message)));
      }
      handle(protocol, req, Buffer.concat(chunks).toString('utf8')).then(
        (answer) => reply(answer.status, answer.headers ?? {}, answer.body),
        (error: unknown) => reply(500, {}, JSON.stringify(errorBody(protocol, 500, String(error)))),
      );
    });
  };
  const server = options.tls
    ? https.createServer(options.tls, handler)
    : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  return {
    url,
    openaiBaseUrl: `${url}/v1`,
    requests,
    stats: () => ({ inFlight, peakInFlight }),
    respond(fn) {
      respond = fn;
    },
    fail(list) {
      faults.push(...list);
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}
