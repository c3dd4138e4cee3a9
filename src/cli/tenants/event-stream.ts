/**
 * A reader for text/event-stream bodies (the WHATWG server-sent events format: `data`, `id`,
 * `event` fields, comment lines, blank-line separated), for the CLI's `--wait`.
 */
export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

function parseSseBlock(block: string): SseMessage | undefined {
  const message: Omit<SseMessage, 'data'> = {};
  const data: string[] = [];
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') data.push(value);
    else if (field === 'id') message.id = value;
    else if (field === 'event') message.event = value;
  }
  return data.length > 0 ? { ...message, data: data.join('\n') } : undefined;
}

export async function* sseMessages(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true }).replaceAll('\r\n', '\n');
    const blocks = buffer.split('\n\n');
    buffer = blocks.pop() ?? '';
    for (const block of blocks) {
      const message = parseSseBlock(block);
      if (message) yield message;
    }
  }
}
