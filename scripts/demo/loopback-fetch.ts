import http from 'node:http';

/**
 * `fetch` for `http://<slug>.localhost:<port>/…` URLs from Node. Browsers resolve every
 * `*.localhost` name to loopback; Node's resolver does not, and Node's fetch ignores a `host`
 * header. This sends the request to 127.0.0.1 with the URL's own Host, as a browser would, so
 * svc sees the tenant's portal host. Plain http only: the demo serves nothing else locally.
 */
export const loopbackFetch: typeof fetch = async (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const headers = new Headers(init?.headers);
  const body = typeof init?.body === 'string' ? init.body : undefined;
  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: url.port || 80,
        path: `${url.pathname}${url.search}`,
        method: init?.method ?? 'GET',
        headers: { ...Object.fromEntries(headers), host: url.host },
      },
      resolve,
    );
    req.on('error', reject);
    req.end(body);
  });
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    for (const item of [value ?? []].flat()) responseHeaders.append(name, item);
  }
  const status = response.statusCode ?? 502;
  const nullBody = status === 204 || status === 304;
  return new Response(nullBody ? null : Buffer.concat(chunks), {
    status,
    headers: responseHeaders,
  });
};
