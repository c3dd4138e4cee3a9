/**
 * The markdown of investigation notes (docs/web.md "Markdown"), parsed into plain data that
 * `Markdown.tsx` turns into React elements. Nothing here ever produces HTML: a `<script>` in a
 * note is the text `<script>`, React escapes it like any other string, and the only attribute
 * taken from the author is a link's address, which must be http(s) or mailto (`safeHref`).
 * The subset is what analysts write in a ticket: paragraphs (a line break is kept), headings,
 * lists, quotes, fenced code, `code`, **strong**, *emphasis*, [links](https://…) and bare
 * https:// addresses. Anything else stays literal text.
 */

export type Inline =
  | { kind: 'text'; text: string }
  | { kind: 'break' }
  | { kind: 'code'; text: string }
  | { kind: 'strong'; children: Inline[] }
  | { kind: 'em'; children: Inline[] }
  | { kind: 'link'; href: string; children: Inline[] };

export type Block =
  | { kind: 'paragraph'; children: Inline[] }
  | { kind: 'heading'; children: Inline[] }
  | { kind: 'list'; ordered: boolean; items: Inline[][] }
  | { kind: 'quote'; children: Block[] }
  | { kind: 'code'; text: string }
  | { kind: 'rule' };

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

/**
 * The address a link may carry: absolute http, https or mailto, else undefined (the link
 * stays text). `javascript:`, `data:`, `vbscript:`, relative and protocol-relative addresses
 * are refused; the URL parser's own reading decides, so `JaVaScRiPt:` or a tab inside the
 * scheme do not slip through.
 */
export function safeHref(raw: string): string | undefined {
  const candidate = raw.trim();
  if (!/^(?:https?:\/\/|mailto:)/i.test(candidate)) return undefined;
  try {
    const url = new URL(candidate);
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Quotes inside quotes stop here; deeper `>` stay text. */
const MAX_QUOTE_DEPTH = 4;

const FENCE = /^\s{0,3}(```|~~~)/;
const HEADING = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const NUMBERED = /^\s{0,3}\d{1,9}[.)]\s+(.*)$/;

/** Parses a note's markdown into blocks. */
export function parseMarkdown(source: string, depth = 0): Block[] {
  const lines = source.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let i = 0;
  const blank = (line: string) => line.trim() === '';
  const startsBlock = (line: string) =>
    FENCE.test(line) ||
    HEADING.test(line) ||
    RULE.test(line) ||
    (depth < MAX_QUOTE_DEPTH && QUOTE.test(line)) ||
    BULLET.test(line) ||
    NUMBERED.test(line);
  while (i < lines.length) {
    const line = lines[i] ?? '';
    if (blank(line)) {
      i++;
      continue;
    }
    const fence = FENCE.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !(lines[i] ?? '').trimStart().startsWith(fence[1] ?? '```')) {
        body.push(lines[i] ?? '');
        i++;
      }
      i++; // the closing fence (or the end)
      blocks.push({ kind: 'code', text: body.join('\n') });
      continue;
    }
    const heading = HEADING.exec(line);
    if (heading) {
      blocks.push({ kind: 'heading', children: parseInline(heading[1] ?? '') });
      i++;
      continue;
    }
    if (RULE.test(line)) {
      blocks.push({ kind: 'rule' });
      i++;
      continue;
    }
    if (depth < MAX_QUOTE_DEPTH && QUOTE.test(line)) {
      const quoted: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i] ?? '')) {
        quoted.push(QUOTE.exec(lines[i] ?? '')?.[1] ?? '');
        i++;
      }
      blocks.push({ kind: 'quote', children: parseMarkdown(quoted.join('\n'), depth + 1) });
      continue;
    }
    const ordered = NUMBERED.test(line);
    if (ordered || BULLET.test(line)) {
      const marker = ordered ? NUMBERED : BULLET;
      const items: string[][] = [];
      while (i < lines.length) {
        const current = lines[i] ?? '';
        const item = marker.exec(current);
        if (item) {
          items.push([item[1] ?? '']);
        } else if (!blank(current) && /^\s+/.test(current) && items.length > 0) {
          // An indented line continues the item above it.
          items[items.length - 1]?.push(current.trim());
        } else {
          break;
        }
        i++;
      }
      blocks.push({
        kind: 'list',
        ordered,
        items: items.map((item) => parseInline(item.join('\n'))),
      });
      continue;
    }
    const paragraph: string[] = [line];
    i++;
    while (i < lines.length && !blank(lines[i] ?? '') && !startsBlock(lines[i] ?? '')) {
      paragraph.push(lines[i] ?? '');
      i++;
    }
    blocks.push({ kind: 'paragraph', children: parseInline(paragraph.join('\n').trim()) });
  }
  return blocks;
}

const ESCAPABLE = '\\`*_[]()#+-.!>~';
/** A bare address ends at white space or `<`; trailing punctuation belongs to the sentence. */
const BARE_URL = /^https?:\/\/[^\s<]+/i;
const TRAILING_PUNCTUATION = /[.,;:!?'")\]]+$/;

/** Parses the inline markup of one paragraph, heading or list item. */
export function parseInline(source: string): Inline[] {
  const out: Inline[] = [];
  let text = '';
  const flush = () => {
    if (text) out.push({ kind: 'text', text });
    text = '';
  };
  let i = 0;
  while (i < source.length) {
    const ch = source[i] ?? '';
    const rest = source.slice(i);
    if (ch === '\\' && i + 1 < source.length && ESCAPABLE.includes(source[i + 1] ?? '')) {
      text += source[i + 1];
      i += 2;
      continue;
    }
    if (ch === '\n') {
      flush();
      out.push({ kind: 'break' });
      i++;
      continue;
    }
    if (ch === '`') {
      const run = /^`+/.exec(rest)?.[0] ?? '`';
      const close = source.indexOf(run, i + run.length);
      if (close > 0) {
        flush();
        out.push({ kind: 'code', text: source.slice(i + run.length, close).trim() || ' ' });
        i = close + run.length;
        continue;
      }
      text += run;
      i += run.length;
      continue;
    }
    if (rest.startsWith('**') || rest.startsWith('__')) {
      const mark = rest.slice(0, 2);
      const close = source.indexOf(mark, i + 2);
      if (close > i + 2 && (mark === '**' || boundaryAround(source, i, close + 2))) {
        flush();
        out.push({ kind: 'strong', children: parseInline(source.slice(i + 2, close)) });
        i = close + 2;
        continue;
      }
    }
    if ((ch === '*' || ch === '_') && !/\s/.test(source[i + 1] ?? ' ')) {
      const close = findClosing(source, ch, i + 1);
      if (close > i + 1 && (ch === '*' || boundaryAround(source, i, close + 1))) {
        flush();
        out.push({ kind: 'em', children: parseInline(source.slice(i + 1, close)) });
        i = close + 1;
        continue;
      }
    }
    if (ch === '[') {
      const link = parseLink(source, i);
      if (link) {
        const href = safeHref(link.target);
        if (href) {
          flush();
          out.push({ kind: 'link', href, children: parseInline(link.label) });
          i = link.end;
          continue;
        }
        // A refused address stays as the text the author wrote, so nothing is hidden.
        text += source.slice(i, link.end);
        i = link.end;
        continue;
      }
    }
    if ((ch === 'h' || ch === 'H') && (i === 0 || /[\s(]/.test(source[i - 1] ?? ''))) {
      const bare = BARE_URL.exec(rest)?.[0];
      if (bare) {
        const address = bare.replace(TRAILING_PUNCTUATION, '');
        const href = safeHref(address);
        if (href) {
          flush();
          out.push({ kind: 'link', href, children: [{ kind: 'text', text: address }] });
          i += address.length;
          continue;
        }
      }
    }
    text += ch;
    i++;
  }
  flush();
  return out;
}

/** `_` marks only outside words, so snake_case names such as false_positive stay as written. */
function boundaryAround(source: string, start: number, end: number): boolean {
  const word = /[\p{L}\p{N}]/u;
  return !word.test(source[start - 1] ?? ' ') && !word.test(source[end] ?? ' ');
}

/**
 * How far an emphasis or a link label may reach: a note of openers that never close then parses
 * in linear time, not in the square of its length.
 */
const MAX_SPAN = 1000;

/** The closing single `*` or `_` of an emphasis opened before `from`, not part of a pair. */
function findClosing(source: string, mark: string, from: number): number {
  const end = Math.min(source.length, from + MAX_SPAN);
  for (let j = from; j < end; j++) {
    const c = source[j];
    if (c === '\n') return -1;
    if (c === '\\') {
      j++;
      continue;
    }
    if (c === mark && source[j + 1] !== mark && !/\s/.test(source[j - 1] ?? ' ')) return j;
    if (c === mark && source[j + 1] === mark) j++;
  }
  return -1;
}

/** `[label](target)` at `start`: label and target without brackets, and where it ends. */
function parseLink(
  source: string,
  start: number,
): { label: string; target: string; end: number } | undefined {
  let depth = 0;
  let j = start;
  const end = Math.min(source.length, start + MAX_SPAN);
  for (; j < end; j++) {
    const c = source[j];
    if (c === '\\') {
      j++;
      continue;
    }
    if (c === '\n') return undefined;
    if (c === '[') depth++;
    if (c === ']') {
      depth--;
      if (depth === 0) break;
    }
  }
  if (j >= end || source[j + 1] !== '(') return undefined;
  const close = source.indexOf(')', j + 2);
  if (close < 0) return undefined;
  const target = source.slice(j + 2, close);
  if (/\s/.test(target.trim())) return undefined;
  return { label: source.slice(start + 1, j), target, end: close + 1 };
}
