import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Block, type Inline, parseMarkdown, safeHref } from '../../web/shared/markdown.ts';

/**
 * Notes are markdown rendered safely (docs/web.md "Markdown"): the parser yields plain data
 * that web/shared/Markdown.tsx turns into React elements, so HTML in a note is text and the
 * only author-chosen attribute, a link's address, is http(s) or mailto.
 */

/** Every text a block tree carries, and every link address, flattened. */
function texts(blocks: Block[]): { text: string; hrefs: string[] } {
  const parts: string[] = [];
  const hrefs: string[] = [];
  const inline = (nodes: Inline[]) => {
    for (const n of nodes) {
      if (n.kind === 'text' || n.kind === 'code') parts.push(n.text);
      if (n.kind === 'break') parts.push('\n');
      if (n.kind === 'strong' || n.kind === 'em') inline(n.children);
      if (n.kind === 'link') {
        hrefs.push(n.href);
        inline(n.children);
      }
    }
  };
  const block = (nodes: Block[]) => {
    for (const b of nodes) {
      if (b.kind === 'paragraph' || b.kind === 'heading') inline(b.children);
      if (b.kind === 'list') for (const item of b.items) inline(item);
      if (b.kind === 'quote') block(b.children);
      if (b.kind === 'code') parts.push(b.text);
    }
  };
  block(blocks);
  return { text: parts.join(''), hrefs };
}

test('markdown: links carry only http, https and mailto addresses; any other stays literal text', () => {
  for (const good of ['https://example.org/a?b=c', 'http://10.0.0.1/x', 'mailto:soc@example.org']) {
    assert.ok(safeHref(good), good);
  }
  for (const bad of [
    'javascript:alert(1)',
    'JaVaScRiPt:alert(1)',
    ' javascript:alert(1)',
    'java\tscript:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)',
    '//evil.example/x',
    '/relative',
    'https//missing-colon',
  ]) {
    assert.equal(safeHref(bad), undefined, bad);
  }
  const parsed = texts(parseMarkdown('[click](javascript:alert(1)) and [ok](https://example.org)'));
  assert.deepEqual(parsed.hrefs, ['https://example.org/']);
  assert.match(
    parsed.text,
    /\[click\]\(javascript:alert\(1\)/,
    'the refused link is shown as written',
  );
});

test('markdown: HTML in a note is text, never markup', () => {
  const source = '<img src=x onerror=alert(1)> <script>alert(2)</script>\n\n<b>bold?</b>';
  const blocks = parseMarkdown(source);
  assert.ok(blocks.every((b) => b.kind === 'paragraph'));
  assert.equal(
    texts(blocks).text,
    '<img src=x onerror=alert(1)> <script>alert(2)</script><b>bold?</b>',
  );
});

test('markdown: the subset analysts write: paragraphs, line breaks, lists, quotes, code, emphasis', () => {
  const blocks = parseMarkdown(
    [
      '## Findings',
      'Host **web-01** talked to *203.0.113.9*;',
      'see `netstat -an` output.',
      '',
      '- blocked at the edge',
      '- verdict false_positive, owner __not__ paged',
      '',
      '1. first',
      '2. second',
      '',
      '> quoted from the customer',
      '',
      '```',
      'raw <log> line',
      '```',
      'More at https://example.org/case/1.',
    ].join('\n'),
  );
  assert.deepEqual(
    blocks.map((b) => b.kind),
    ['heading', 'paragraph', 'list', 'list', 'quote', 'code', 'paragraph'],
  );
  const paragraph = blocks[1];
  assert.ok(paragraph?.kind === 'paragraph');
  assert.deepEqual(
    paragraph.children.map((c) => c.kind),
    ['text', 'strong', 'text', 'em', 'text', 'break', 'text', 'code', 'text'],
  );
  const bullets = blocks[2];
  assert.ok(bullets?.kind === 'list' && !bullets.ordered && bullets.items.length === 2);
  // snake_case stays as written; __x__ between words is strong.
  assert.deepEqual(
    texts([bullets]).text,
    'blocked at the edgeverdict false_positive, owner not paged',
  );
  const numbered = blocks[3];
  assert.ok(numbered?.kind === 'list' && numbered.ordered && numbered.items.length === 2);
  const code = blocks[5];
  assert.deepEqual(code, { kind: 'code', text: 'raw <log> line' });
  assert.deepEqual(texts([blocks[6] as Block]).hrefs, ['https://example.org/case/1']);
});

test('markdown: unbalanced marks and deep quotes end, as text', () => {
  const source = `${'>'.repeat(50)} deep\n**open \`tick [x](https://a.example`;
  const blocks = parseMarkdown(source);
  assert.ok(texts(blocks).text.includes('**open `tick [x](https://a.example'));
  // A note's longest body (10000 characters) of openers that never close parses quickly, as text.
  for (const long of [
    '[a'.repeat(5000),
    'a_'.repeat(5000),
    '[a](b'.repeat(2000),
    'x *a'.repeat(2500),
  ]) {
    const started = performance.now();
    const text = texts(parseMarkdown(long)).text;
    assert.ok(text === long, `${long.slice(0, 6)}… stays as written`);
    assert.ok(performance.now() - started < 2_000, `${long.slice(0, 6)}… parsed in time`);
  }
});
