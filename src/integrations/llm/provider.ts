// The protocol-neutral face of a chat model: the pipeline asks for one completion and gets its
// text and token counts; which wire protocol carries it is the provider module's business.

export type ChatRole = 'user' | 'assistant';

export interface ChatMessage {
  role: ChatRole;
  content: string;
}

export interface CompletionRequest {
  model: string;
  /** Instructions; sent as the system message (OpenAI) or the `system` field (Anthropic). */
  system: string;
  messages: ChatMessage[];
  maxTokens: number;
  temperature?: number;
  /**
   * Ask for a JSON object. OpenAI-compatible servers get `response_format` (json_schema when a
   * schema is given); Anthropic gets the instruction in the system prompt. The caller validates.
   */
  json?: { name: string; schema: Record<string, unknown> };
}

export interface CompletionResult {
  text: string;
  /** The model the server says answered (may differ from the one asked for). */
  model: string;
  usage: { inputTokens: number; outputTokens: number };
  /** Attempts made, 1 when the first one succeeded. */
  attempts: number;
}

export type LlmErrorKind =
  /** No answer within the timeout. */
  | 'timeout'
  /** 429 after every retry. */
  | 'rate_limited'
  /** 5xx after every retry. */
  | 'server'
  /** 4xx other than 429 (bad key, unknown model): retrying cannot help. */
  | 'client'
  /** A 2xx whose body is not the protocol's response shape. */
  | 'malformed'
  /** Connection refused, DNS failure, refused by the outbound policy. */
  | 'unreachable';

export class LlmError extends Error {
  override name = 'LlmError';
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
    readonly status?: number,
    readonly attempts = 1,
  ) {
    super(message);
  }
}

/** What a provider needs to send requests: a fetch (the outbound-policy one in production). */
export type ProviderFetch = (
  url: string,
  init: { method: string; headers: Record<string, string>; body: string; signal: AbortSignal },
) => Promise<Response>;

export interface ProviderSettings {
  /** `openai` (and its aliases) or `anthropic`; see createProvider. */
  provider: string;
  baseUrl: string;
  apiKey?: string | undefined;
  fetch: ProviderFetch;
  /** Per attempt. Default 60 s. */
  timeoutMs?: number;
  /** Retries after the first attempt on 429, 5xx, timeouts and connection errors. Default 2. */
  retries?: number;
  /** First backoff; doubles per retry, with jitter; a Retry-After header wins. Default 500 ms. */
  backoffMs?: number;
  /** Longest wait honoured from Retry-After before giving up as rate_limited. Default 30 s. */
  maxRetryAfterMs?: number;
  /** Injected in tests to observe waits without sleeping. */
  sleep?: (ms: number) => Promise<void>;
}

export interface LlmProvider {
  readonly provider: string;
  complete(request: CompletionRequest): Promise<CompletionResult>;
}
