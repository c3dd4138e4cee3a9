import {
  type CompletionRequest,
  type CompletionResult,
  LlmError,
  type LlmProvider,
  type ProviderSettings,
} from './provider.ts';
import { sendWithRetry, tokenCount } from './send.ts';

// Anthropic's Messages API: POST <baseUrl>/v1/messages with x-api-key and a pinned
// anthropic-version. It has no response_format, so a JSON answer is asked for in the system
// prompt and the caller validates what comes back.

const API_VERSION = '2023-06-01';

export function createAnthropicProvider(settings: ProviderSettings): LlmProvider {
  const base = settings.baseUrl.replace(/\/+$/, '');
  const url = base.endsWith('/v1') ? `${base}/messages` : `${base}/v1/messages`;
  const headers: Record<string, string> = {
    'anthropic-version': API_VERSION,
    ...(settings.apiKey ? { 'x-api-key': settings.apiKey } : {}),
  };
  return {
    provider: 'anthropic',
    async complete(request) {
      const answer = await sendWithRetry(settings, {
        url,
        headers,
        body: requestBody(request),
        describeError,
      });
      return parseAnswer(answer.text, request.model, answer.status, answer.attempts);
    },
  };
}

function requestBody(request: CompletionRequest): Record<string, unknown> {
  return {
    model: request.model,
    max_tokens: request.maxTokens,
    system: systemPrompt(request),
    messages: request.messages,
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
  };
}

function systemPrompt(request: CompletionRequest): string {
  if (!request.json) return request.system;
  const instruction =
    `Answer with exactly one JSON object and nothing else (no prose, no code fences). ` +
    `It must match this JSON Schema, named "${request.json.name}":\n` +
    JSON.stringify(request.json.schema);
  return request.system ? `${request.system}\n\n${instruction}` : instruction;
}

interface Message {
  type?: unknown;
  model?: unknown;
  content?: unknown;
  usage?: { input_tokens?: unknown; output_tokens?: unknown };
}

function parseAnswer(
  text: string,
  askedModel: string,
  status: number,
  attempts: number,
): CompletionResult {
  const malformed = (why: string) =>
    new LlmError('malformed', `message ${why} (HTTP ${status})`, status, attempts);
  let body: Message;
  try {
    body = JSON.parse(text) as Message;
  } catch {
    throw malformed('is not JSON');
  }
  if (body?.type !== 'message' || !Array.isArray(body.content)) {
    throw malformed('is not of type "message" with a content array');
  }
  const texts = (body.content as Array<{ type?: unknown; text?: unknown }>)
    .filter((block) => block?.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text as string);
  return {
    text: texts.join(''),
    model: typeof body.model === 'string' ? body.model : askedModel,
    usage: {
      inputTokens: tokenCount(body.usage?.input_tokens),
      outputTokens: tokenCount(body.usage?.output_tokens),
    },
    attempts,
  };
}

/** `{type: "error", error: {type, message}}`; `overloaded_error` (HTTP 529) is a server fault. */
function describeError(text: string): { message: string | undefined; overloaded: boolean } {
  let body: { error?: { type?: unknown; message?: unknown } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return { message: undefined, overloaded: false };
  }
  const message = body?.error?.message;
  return {
    message: typeof message === 'string' ? message : undefined,
    overloaded: body?.error?.type === 'overloaded_error',
  };
}
