import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, test } from 'node:test';
import {
  type CompletionRequest,
  createProvider,
  KNOWN_PROVIDERS,
  LlmError,
  type ProviderSettings,
} from '../../src/integrations/llm/index.ts';
import {
  DEFAULT_TRIAGE_ANSWER,
  type LlmStandIn,
  startLlmStandIn,
} from '../support/llm-stand-in.ts';

// Issue 13 "LLM providers": the OpenAI-compatible and Anthropic clients against a local server
// speaking both protocols; "Timeouts, retries with backoff on 429/5xx"; the API key is never
// in an error message.

const KEY = 'sk-test-7f3c1d9e2b5a4c8d0e6f';

let llm: LlmStandIn;
let waits: number[];

before(async () => {
  llm = await startLlmStandIn({ apiKey: KEY });
});
after(() => llm.close());
beforeEach(() => {
  llm.requests.length = 0;
  llm.respond(() => DEFAULT_TRIAGE_ANSWER);
  waits = [];
});

const TRIAGE_SCHEMA = {
  type: 'object',
  required: ['verdict', 'severity', 'confidence', 'rationale'],
  properties: { verdict: { type: 'string' }, confidence: { type: 'number', minimum: 0 } },
};

const plainRequest: CompletionRequest = {
  model: 'test-model-1',
  system: 'You triage security alerts.',
  messages: [{ role: 'user', content: 'Alert: sshd authentication failure' }],
  maxTokens: 400,
  temperature: 0,
};
const request: CompletionRequest = {
  ...plainRequest,
  json: { name: 'triage', schema: TRIAGE_SCHEMA },
};

function provider(name: string, overrides: Partial<ProviderSettings> = {}) {
  return createProvider({
    provider: name,
    baseUrl: name === 'anthropic' ? llm.url : llm.openaiBaseUrl,
    apiKey: KEY,
    fetch: (url, init) => fetch(url, init),
    sleep: async (ms) => {
      waits.push(ms);
    },
    ...overrides,
  });
}

async function rejects(promise: Promise<unknown>): Promise<LlmError> {
  const error = await promise.then(
    () => assert.fail('expected an LlmError'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof LlmError, String(error));
  return error;
}

test('issue 13 LLM providers: OpenAI chat completions round-trip (Bearer key, system first, json_schema response_format)', async () => {
  const result = await provider('openai').complete(request);
  assert.deepEqual(JSON.parse(result.text), JSON.parse(DEFAULT_TRIAGE_ANSWER));
  assert.equal(result.model, 'test-model-1');
  assert.equal(result.attempts, 1);
  assert.ok(result.usage.inputTokens > 0 && result.usage.outputTokens > 0, 'usage counted');

  const [sent] = llm.requests;
  assert.equal(sent?.protocol, 'openai');
  assert.equal(sent.headers.authorization, `Bearer ${KEY}`);
  assert.equal(sent.headers['content-type'], 'application/json');
  assert.deepEqual(sent.body, {
    model: 'test-model-1',
    messages: [
      { role: 'system', content: 'You triage security alerts.' },
      { role: 'user', content: 'Alert: sshd authentication failure' },
    ],
    max_tokens: 400,
    temperature: 0,
    response_format: {
      type: 'json_schema',
      json_schema: { name: 'triage', schema: TRIAGE_SCHEMA, strict: false },
    },
  });
});

test('issue 13 LLM providers: Anthropic Messages round-trip (x-api-key, version, system field, schema in the prompt)', async () => {
  const result = await provider('anthropic').complete(request);
  assert.deepEqual(JSON.parse(result.text), JSON.parse(DEFAULT_TRIAGE_ANSWER));
  assert.equal(result.model, 'test-model-1');
  assert.ok(result.usage.inputTokens > 0 && result.usage.outputTokens > 0, 'usage counted');

  const [sent] = llm.requests;
  assert.equal(sent?.protocol, 'anthropic');
  assert.equal(sent.headers['x-api-key'], KEY);
  assert.equal(sent.headers['anthropic-version'], '2023-06-01');
  assert.equal(sent.headers.authorization, undefined);
  assert.equal(sent.body.model, 'test-model-1');
  assert.equal(sent.body.max_tokens, 400);
  assert.equal(sent.body.temperature, 0);
  assert.deepEqual(sent.body.messages, request.messages);
  assert.equal('response_format' in sent.body, false);
  const system = String(sent.body.system);
  assert.ok(system.startsWith('You triage security alerts.'), system);
  assert.ok(system.includes(JSON.stringify(TRIAGE_SCHEMA)), 'schema in the system prompt');
});

test('issue 13 LLM providers: an Anthropic base URL ending in /v1 is not doubled; no json asked, no instruction added', async () => {
  const result = await provider('anthropic', { baseUrl: `${llm.url}/v1/` }).complete(plainRequest);
  assert.equal(result.attempts, 1);
  assert.equal(llm.requests[0]?.body.system, 'You triage security alerts.');
});

test('issue 13 LLM providers: Anthropic text blocks are joined and other blocks skipped', async () => {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-served-model',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'x' },
            { type: 'text', text: '{"a":' },
            { type: 'text', text: '1}' },
          ],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 12, output_tokens: 5 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const result = await provider('anthropic', { baseUrl: `http://127.0.0.1:${port}` }).complete(
      request,
    );
    assert.deepEqual(result, {
      text: '{"a":1}',
      model: 'claude-served-model',
      usage: { inputTokens: 12, outputTokens: 5 },
      attempts: 1,
    });
  } finally {
    server.close();
  }
});

test('issue 13 LLM providers: an OpenAI-compatible server without a key gets no Authorization header; missing usage counts 0', async () => {
  const authorizations: Array<string | undefined> = [];
  const server = createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'chatcmpl-1',
          object: 'chat.completion',
          created: 1,
          model: 'llama3.1:8b',
          choices: [
            { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
          ],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const ollama = provider('ollama', {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: undefined,
    });
    assert.equal(ollama.provider, 'ollama');
    const result = await ollama.complete(request);
    assert.deepEqual(result.usage, { inputTokens: 0, outputTokens: 0 });
    assert.equal(result.model, 'llama3.1:8b');
    assert.deepEqual(authorizations, [undefined]);
  } finally {
    server.close();
  }
});

test('issue 13 retries: a 500 then an answer succeeds on attempt 2 after a jittered backoff', async () => {
  for (const name of ['openai', 'anthropic']) {
    llm.fail([{ status: 500 }]);
    waits = [];
    const result = await provider(name, { backoffMs: 200 }).complete(request);
    assert.equal(result.attempts, 2, name);
    assert.equal(waits.length, 1, name);
    assert.ok((waits[0] ?? -1) >= 0 && (waits[0] ?? 0) < 200, `full jitter under 200 ms: ${waits}`);
  }
  assert.equal(llm.requests.length, 4);
});

test('issue 13 retries: Anthropic 529 overloaded_error is a server error, retried', async () => {
  llm.fail([
    { status: 529, message: 'Overloaded' },
    { status: 529, message: 'Overloaded' },
  ]);
  const error = await rejects(provider('anthropic', { retries: 1 }).complete(request));
  assert.equal(error.kind, 'server');
  assert.equal(error.status, 529);
  assert.equal(error.attempts, 2);
  assert.match(error.message, /Overloaded/);
});

test('issue 13 retries: 429 with Retry-After: 1 waits 1 s, then succeeds', async () => {
  llm.fail([{ status: 429, retryAfter: '1' }]);
  const result = await provider('openai').complete(request);
  assert.equal(result.attempts, 2);
  assert.deepEqual(waits, [1000]);
});

test('issue 13 retries: Retry-After as an HTTP date is honoured', async () => {
  llm.fail([{ status: 503, retryAfter: new Date(Date.now() + 5_000).toUTCString() }]);
  const result = await provider('anthropic').complete(request);
  assert.equal(result.attempts, 2);
  assert.equal(waits.length, 1);
  assert.ok((waits[0] ?? 0) > 3_000 && (waits[0] ?? 0) <= 5_000, `waited ${waits}`);
});

test('issue 13 retries: a Retry-After beyond maxRetryAfterMs stops at once as rate_limited', async () => {
  llm.fail([{ status: 429, retryAfter: '120' }]);
  const error = await rejects(provider('openai', { maxRetryAfterMs: 30_000 }).complete(request));
  assert.equal(error.kind, 'rate_limited');
  assert.equal(error.status, 429);
  assert.equal(error.attempts, 1);
  assert.deepEqual(waits, []);
  assert.equal(llm.requests.length, 1);
});

test('issue 13 retries: 429 on every attempt ends rate_limited after retries + 1 attempts', async () => {
  llm.fail([{ status: 429 }, { status: 429 }, { status: 429 }]);
  const error = await rejects(provider('anthropic', { retries: 2 }).complete(request));
  assert.equal(error.kind, 'rate_limited');
  assert.equal(error.attempts, 3);
  assert.equal(llm.requests.length, 3);
  assert.equal(waits.length, 2);
});

test('issue 13 timeouts: no answer within timeoutMs is retried, then fails as timeout', async () => {
  llm.fail([{ delayMs: 5_000 }, { delayMs: 5_000 }]);
  const started = Date.now();
  const error = await rejects(provider('openai', { timeoutMs: 150, retries: 1 }).complete(request));
  assert.equal(error.kind, 'timeout');
  assert.equal(error.attempts, 2);
  assert.equal(llm.requests.length, 2);
  assert.ok(Date.now() - started < 2_000, 'gave up long before the server answered');
});

test('issue 13 timeouts: a timeout then an answer succeeds on attempt 2', async () => {
  llm.fail([{ delayMs: 5_000 }]);
  const result = await provider('anthropic', { timeoutMs: 150 }).complete(request);
  assert.equal(result.attempts, 2);
});

test('issue 13 errors: 401 fails as client at once with the server message and without the key', async () => {
  const error = await rejects(provider('openai', { apiKey: `${KEY}-wrong` }).complete(request));
  assert.equal(error.kind, 'client');
  assert.equal(error.status, 401);
  assert.equal(error.attempts, 1);
  assert.equal(llm.requests.length, 1);
  assert.match(error.message, /Incorrect API key provided/);
  assert.ok(!error.message.includes(KEY), error.message);

  const anthropic = await rejects(provider('anthropic', { apiKey: 'wrong' }).complete(request));
  assert.equal(anthropic.kind, 'client');
  assert.match(anthropic.message, /invalid x-api-key/);
  assert.equal(llm.requests.length, 2);
});

test('issue 13 errors: a server that echoes the key in its error never gets it into the message', async () => {
  llm.fail([{ status: 403, message: `key ${KEY} may not use model test-model-1` }]);
  const error = await rejects(provider('anthropic').complete(request));
  assert.equal(error.kind, 'client');
  assert.ok(!error.message.includes(KEY), error.message);
  assert.match(error.message, /may not use model test-model-1/);
});

test('issue 13 errors: a 2xx body that is not the protocol shape is malformed, not retried', async () => {
  for (const name of ['openai', 'anthropic']) {
    llm.fail([{ body: 'not json' }]);
    const error = await rejects(provider(name).complete(request));
    assert.equal(error.kind, 'malformed', name);
    assert.equal(error.status, 200);
  }
  llm.fail([{ body: JSON.stringify({ choices: [] }) }]);
  assert.equal((await rejects(provider('vllm').complete(request))).kind, 'malformed');
  llm.fail([{ body: JSON.stringify({ type: 'error', error: { type: 'api_error' } }) }]);
  assert.equal((await rejects(provider('anthropic').complete(request))).kind, 'malformed');
  assert.equal(llm.requests.length, 4);
});

test('issue 13 errors: connection refused is retried, then unreachable', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const { port } = closed.address() as AddressInfo;
  await new Promise((resolve) => closed.close(resolve));
  const error = await rejects(
    provider('llamacpp', { baseUrl: `http://127.0.0.1:${port}/v1`, retries: 1 }).complete(request),
  );
  assert.equal(error.kind, 'unreachable');
  assert.equal(error.attempts, 2);
  assert.match(error.message, /ECONNREFUSED/);
  assert.ok(!error.message.includes(KEY));
});

test('issue 13 providers: every known name builds a provider; an unknown name throws listing them', () => {
  assert.deepEqual([...KNOWN_PROVIDERS].sort(), [
    'anthropic',
    'llamacpp',
    'ollama',
    'openai',
    'openai-compatible',
    'vllm',
  ]);
  for (const name of KNOWN_PROVIDERS) assert.equal(provider(name).provider, name);
  assert.throws(
    () => provider('gemini'),
    (error: Error) =>
      /unknown LLM provider "gemini"/.test(error.message) &&
      KNOWN_PROVIDERS.every((name) => error.message.includes(name)),
  );
  assert.throws(() => provider('toString'), /unknown LLM provider/);
});
