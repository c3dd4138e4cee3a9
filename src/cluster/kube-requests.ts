import type { KubeConfig } from '@kubernetes/client-node';

/** Counts one request to the API server (`svc_kube_requests_total{verb,resource}`). */
export type KubeRequestCounter = (verb: string, resource: string) => void;

/**
 * The same cluster and identity, with every request of every API client made from it counted
 * (API clients authenticate each request through the KubeConfig: the one place all of them
 * pass). The original is left as it was.
 */
export function countedKubeConfig(kubeConfig: KubeConfig, count: KubeRequestCounter): KubeConfig {
  const counted: KubeConfig = new Proxy(kubeConfig, {
    get(object, key) {
      if (key === 'applySecurityAuthentication') {
        return (context: { getUrl(): string; getHttpMethod(): string }) => {
          const { verb, resource } = describeRequest(context.getHttpMethod(), context.getUrl());
          count(verb, resource);
          return object.applySecurityAuthentication(context as never);
        };
      }
      // makeApiClient hands `this` to the client as its authenticator: the counting one, or
      // the receiver of an outer wrapper (counted twice, each counter sees the request).
      if (key === 'makeApiClient') {
        return function makeApiClient(
          this: unknown,
          ...args: Parameters<KubeConfig['makeApiClient']>
        ) {
          return Reflect.apply(object.makeApiClient, this ?? counted, args);
        };
      }
      const value: unknown = Reflect.get(object, key, object);
      return typeof value === 'function' ? value.bind(object) : value;
    },
  });
  return counted;
}

/**
 * Kubernetes' own verb and resource of a request path (`/api/v1/namespaces/x/secrets/y`,
 * `/apis/apps/v1/deployments?watch=true`); a label from a bounded set, never a name.
 */
export function describeRequest(method: string, url: string): { verb: string; resource: string } {
  const { pathname, searchParams } = new URL(url);
  const segments = pathname.split('/').filter(Boolean);
  const rest =
    segments[0] === 'api' ? segments.slice(2) : segments[0] === 'apis' ? segments.slice(3) : [];
  const inNamespace = rest[0] === 'namespaces' && rest.length >= 3 ? rest.slice(2) : rest;
  const [kind, name, sub] = inNamespace;
  const resource =
    kind && /^[a-z0-9.-]+$/.test(kind) && (!sub || /^[a-z]+$/.test(sub))
      ? sub
        ? `${kind}/${sub}`
        : kind
      : 'other';
  const named = name !== undefined;
  const verb =
    method === 'GET'
      ? named
        ? 'get'
        : searchParams.get('watch') === 'true'
          ? 'watch'
          : 'list'
      : method === 'POST'
        ? 'create'
        : method === 'PUT'
          ? 'update'
          : method === 'PATCH'
            ? 'patch'
            : method === 'DELETE'
              ? named
                ? 'delete'
                : 'deletecollection'
              : 'other';
  return { verb, resource };
}
