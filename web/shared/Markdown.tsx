import { type ReactNode, useMemo } from 'react';
import { type Block, type Inline, parseMarkdown } from './markdown.ts';
import './markdown.css';

/**
 * A note's markdown as React elements (docs/web.md "Markdown"): every piece of the author's
 * text is a React string child, never HTML, so no markup of theirs reaches the DOM. Headings
 * inside a note are bold paragraphs: the page's own headings keep their order.
 */
export function Markdown({ source }: { source: string }) {
  const blocks = useMemo(() => parseMarkdown(source), [source]);
  return <div className="markdown">{blocks.map(renderBlock)}</div>;
}

function renderBlock(block: Block, key: number): ReactNode {
  switch (block.kind) {
    case 'paragraph':
      return <p key={key}>{block.children.map(renderInline)}</p>;
    case 'heading':
      return (
        <p key={key} className="markdown-heading">
          <strong>{block.children.map(renderInline)}</strong>
        </p>
      );
    case 'list': {
      const items = block.items.map((item, i) => (
        // biome-ignore lint/suspicious/noArrayIndexKey: a note is append-only; its items never move
        <li key={i}>{item.map(renderInline)}</li>
      ));
      return block.ordered ? <ol key={key}>{items}</ol> : <ul key={key}>{items}</ul>;
    }
    case 'quote':
      return <blockquote key={key}>{block.children.map(renderBlock)}</blockquote>;
    case 'code':
      return (
        <pre key={key}>
          <code>{block.text}</code>
        </pre>
      );
    case 'rule':
      return <hr key={key} />;
  }
}

function renderInline(inline: Inline, key: number): ReactNode {
  switch (inline.kind) {
    case 'text':
      return inline.text;
    case 'break':
      return <br key={key} />;
    case 'code':
      return <code key={key}>{inline.text}</code>;
    case 'strong':
      return <strong key={key}>{inline.children.map(renderInline)}</strong>;
    case 'em':
      return <em key={key}>{inline.children.map(renderInline)}</em>;
    case 'link':
      return (
        <a key={key} href={inline.href} rel="noopener noreferrer" target="_blank">
          {inline.children.map(renderInline)}
        </a>
      );
  }
}
