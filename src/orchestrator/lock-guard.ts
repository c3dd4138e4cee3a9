import type { KubeConfig } from '@kubernetes/client-node';
import type { OrchestratorDeps } from './context.ts';

/**
 * The parts a locked task writes through, each call checking `signal` first: once the tenant's
 * lock is lost (tenant-locks.ts) or the orchestrator stops, the task's next database or cluster
 * call throws the signal's reason instead of running, so a task never takes a step without its
 * lock. Every call counts, reads too: a task that lost its lock has nothing left to decide.
 */
export function guardedDeps<D extends OrchestratorDeps>(deps: D, signal: AbortSignal): D {
  return {
    ...deps,
    provisioning: guarded(deps.provisioning, signal),
    secrets: guarded(deps.secrets, signal),
    namespaces: guarded(deps.namespaces, signal),
    helm: guarded(deps.helm, signal),
    tokens: guarded(deps.tokens, signal),
    kubeConfig: guardedKubeConfig(deps.kubeConfig, signal),
  };
}

function guarded<T extends object>(target: T, signal: AbortSignal): T {
  return new Proxy(target, {
    get(object, key) {
      const value: unknown = Reflect.get(object, key, object);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        signal.throwIfAborted();
        return (value as (...a: unknown[]) => unknown).apply(object, args);
      };
    },
  });
}

/** Every API client made from it checks the signal before each request. */
function guardedKubeConfig(kubeConfig: KubeConfig, signal: AbortSignal): KubeConfig {
  return new Proxy(kubeConfig, {
    get(object, key) {
      const value: unknown = Reflect.get(object, key, object);
      if (key === 'makeApiClient') {
        return (...args: Parameters<KubeConfig['makeApiClient']>) =>
          guarded(object.makeApiClient(...args), signal);
      }
      return typeof value === 'function' ? value.bind(object) : value;
    },
  });
}
