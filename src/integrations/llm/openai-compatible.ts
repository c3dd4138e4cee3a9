import {
  type CompletionRequest,
  type CompletionResult,
  LlmError,
  type LlmProvider,
  type ProviderSettings,
} from './provider.ts';
import { sendWithRetry, tokenCount } from './send.ts';

// OpenAI's chat-completions protocol, which hosted APIs, vLLM, Ollama (`/v1`) and the llama.cpp
// server all speak: POST <baseUrl>/chat/completions, the base already carrying its `/v1`.

export function createOpenAiCompatibleProvider(
  settings: ProviderSettings,
  provider = 'openai-compatible',
): LlmProvider {
  const url = `${settings.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const headers: Record<string, string> = settings.apiKey
    ? { authorization: `Bearer ${settings.apiKey}` }
    : {};
  return {
    provider,
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
    messages: [{ role: 'system', content: request.system }, ...request.messages],
    max_tokens: request.maxTokens,
    ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
    ...(request.json
      ? {
          response_format: {
            type: 'json_schema',
            // strict:false: strict mode rejects common schema keywords (minimum, pattern), and
            // the caller validates the answer anyway.
            json_schema: { name: request.json.name, schema: request.json.schema, strict: false },
          },
        }
      : {}),
  };
}

interface ChatCompletion {
  model?: unknown;
  choices?: Array<{ message?: { content?: unknown } }>;
  usage?: { prompt_tokens?: unknown; completion_tokens?: unknown };
}

function parseAnswer(
  text: string,
  askedModel: string,
  status: number,
  attempts: number,
): CompletionResult {
  const malformed = (why: string) =>
    new LlmError('malformed', `chat completion ${why} (HTTP ${status})`, status, attempts);
  let body: ChatCompletion;
  try {
    body = JSON.parse(text) as ChatCompletion;
  } catch {
    throw malformed('is not JSON');
  }
  const content = body?.choices?.[0]?.message?.content;
  if (typeof content !== 'string') throw malformed('has no choices[0].message.content');
  return {
    text: content,
    model: typeof body.model === 'string' ? body.model : askedModel,
    usage: {
      inputTokens: tokenCount(body.usage?.prompt_tokens),
      outputTokens: tokenCount(body.usage?.completion_tokens),
    },
    attempts,
  };
}

/**
 * OpenAI and llama.cpp answer `{error: {message, type}}`; older vLLM puts `message` at the top
 * level; Ollama's native errors are `{error: "…"}`.
 */
function describeError(text: string): { message: string | undefined; overloaded: boolean } {
  let body: { error?: unknown; message?: unknown };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    return { message: undefined, overloaded: false };
  }
  const nested = (body?.error as { message?: unknown } | undefined)?.message;
  const message = [nested, body?.error, body?.message].find((m) => typeof m === 'string');
  return { message: message as string | undefined, overloaded: false };
}
