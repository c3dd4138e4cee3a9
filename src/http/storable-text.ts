import { ProblemError } from './problem.ts';

/**
 * Every string a caller sends may reach a PostgreSQL text or jsonb value, and PostgreSQL
 * stores neither U+0000 (22021 in text, 22P05 in jsonb) nor a lone UTF-16 surrogate (no UTF-8
 * form: jsonb refuses its escape, text would silently keep U+FFFD instead of what was sent).
 * The contract layer refuses both here, once, for every path parameter, query value and JSON
 * body (keys included), so no route meets them as a 500 from whichever statement is first.
 */
function isStorableText(text: string): boolean {
  return text.isWellFormed() && !text.includes('\u0000');
}

/** An RFC 6901 token; the offending characters themselves are not echoed back. */
function pointerToken(key: string): string {
  return key
    .toWellFormed()
    .replaceAll('\u0000', '\uFFFD')
    .replaceAll('~', '~0')
    .replaceAll('/', '~1');
}

/**
 * The JSON pointer (under `base`) of the first string or object key, in document order, that
 * cannot be stored; undefined when there is none. Iterative, because a 1 MiB body can nest
 * deeper than the call stack.
 */
function findUnstorableText(value: unknown, base = ''): string | undefined {
  const pending: { value: unknown; pointer: string; key?: string }[] = [{ value, pointer: base }];
  for (let next = pending.pop(); next; next = pending.pop()) {
    if (next.key !== undefined && !isStorableText(next.key)) return next.pointer;
    const current = next.value;
    if (typeof current === 'string') {
      if (!isStorableText(current)) return next.pointer;
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        pending.push({ value: current[i], pointer: `${next.pointer}/${i}` });
      }
    } else if (current !== null && typeof current === 'object') {
      const entries = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        pending.push({ value: child, pointer: `${next.pointer}/${pointerToken(key)}`, key });
      }
    }
  }
  return undefined;
}

/** Raises 400 `invalid_characters` naming the first unstorable string under `base`. */
export function refuseUnstorableText(value: unknown, base = ''): void {
  const path = findUnstorableText(value, base);
  if (path === undefined) return;
  throw new ProblemError(
    400,
    'invalid_characters',
    'Request contains characters svc cannot store',
    {
      errors: [
        { path: path || '/', message: 'must not contain U+0000 or an unpaired UTF-16 surrogate' },
      ],
    },
  );
}
