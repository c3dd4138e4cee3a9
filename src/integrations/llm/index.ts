import { createAnthropicProvider } from './anthropic.ts';
import { createOpenAiCompatibleProvider } from './openai-compatible.ts';
import { LlmError, type LlmProvider, type ProviderSettings } from './provider.ts';

export * from './provider.ts';

/** Provider names a tenant or the install may configure, and the protocol each speaks. */
const PROTOCOLS = {
  openai: 'openai',
  'openai-compatible': 'openai',
  vllm: 'openai',
  ollama: 'openai',
  llamacpp: 'openai',
  anthropic: 'anthropic',
} as const;

export const KNOWN_PROVIDERS = Object.keys(PROTOCOLS) as ReadonlyArray<keyof typeof PROTOCOLS>;

export function createProvider(settings: ProviderSettings): LlmProvider {
  const name = settings.provider;
  if (!Object.hasOwn(PROTOCOLS, name)) {
    // A configuration error, not a passing failure: the pipeline records it instead of retrying.
    throw new LlmError(
      'client',
      `unknown LLM provider "${name}"; known providers: ${KNOWN_PROVIDERS.join(', ')}`,
    );
  }
  return PROTOCOLS[name as keyof typeof PROTOCOLS] === 'anthropic'
    ? createAnthropicProvider(settings)
    : createOpenAiCompatibleProvider(settings, name);
}
