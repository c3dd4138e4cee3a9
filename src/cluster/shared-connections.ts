import type { KubeConfig } from '@kubernetes/client-node';

/** A connection pool is replaced after this long, so rotated client certificates are picked up. */
export const SHARED_DISPATCHER_MAX_AGE_MS = 5 * 60_000;

interface DispatcherContext {
  getDispatcher(): unknown;
  setDispatcher(dispatcher: unknown): void;
}

interface Closable {
  close?(): Promise<void>;
}

/**
 * The same cluster and identity, with every request of every API client made from it sharing
 * one keep-alive connection pool. @kubernetes/client-node 2.0 builds a new undici Agent in
 * `applySecurityAuthentication` for every request (KubeConfig.createDispatcher), so each request
 * opened its own TLS connection (a handshake and a secure context each, the sockets lingering
 * until their keep-alive ran out): a reconcile pass over 100 tenants made ~700 of them and the
 * orchestrator's RSS grew with the tenant count (docs/orchestrator.md "What one pass costs").
 *
 * Headers (tokens, which may rotate) are still set per request by the original; only the
 * dispatcher it made is swapped for the shared one, which is replaced after
 * SHARED_DISPATCHER_MAX_AGE_MS (the old one closes once its requests are done). The original is
 * left as it was.
 */
export function sharedConnections(
  kubeConfig: KubeConfig,
  now: () => number = Date.now,
): KubeConfig {
  let shared: { dispatcher: unknown; since: number } | undefined;
  const adopt = (fresh: unknown): unknown => {
    if (fresh === undefined) return undefined;
    if (shared && now() - shared.since < SHARED_DISPATCHER_MAX_AGE_MS) return shared.dispatcher;
    const old = shared?.dispatcher as Closable | undefined;
    shared = { dispatcher: fresh, since: now() };
    void old?.close?.().catch(() => undefined);
    return fresh;
  };
  const wrapped: KubeConfig = new Proxy(kubeConfig, {
    get(object, key) {
      if (key === 'applySecurityAuthentication') {
        return async (context: DispatcherContext) => {
          await object.applySecurityAuthentication(context as never);
          const dispatcher = adopt(context.getDispatcher());
          if (dispatcher !== undefined) context.setDispatcher(dispatcher);
        };
      }
      // makeApiClient hands `this` to the client as its authenticator: this wrapper, or the
      // receiver of an outer one (which calls through to this one).
      if (key === 'makeApiClient') {
        return function makeApiClient(
          this: unknown,
          ...args: Parameters<KubeConfig['makeApiClient']>
        ) {
          return Reflect.apply(object.makeApiClient, this ?? wrapped, args);
        };
      }
      const value: unknown = Reflect.get(object, key, object);
      return typeof value === 'function' ? value.bind(object) : value;
    },
  });
  return wrapped;
}
