// What a tenant's logo and favicon may be (docs/web.md "Branding"): an https URL, or a data URL
// whose bytes are what its media type says, at most 200 KiB decoded, and for SVG, a picture and
// nothing else. The portal draws these on its sign-in page, before anyone signs in; an SVG that
// carries script or fetches from elsewhere is refused even though an <img> would not run it,
// because the same data URL may be opened on its own or reused where it would.
import type { BrandingProblem } from './branding-types.ts';

/** 200 KiB, decoded. */
export const MAX_IMAGE_BYTES = 200 * 1024;

const DATA_URL = /^data:image\/(png|jpeg|svg\+xml);base64,(.*)$/s;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const JPEG_SIGNATURE = Buffer.from([0xff, 0xd8, 0xff]);

/** Why `url` (at body pointer `path`) cannot be a logo or favicon; empty when it can. */
export function imageProblems(path: string, url: string | null | undefined): BrandingProblem[] {
  const data = url ? DATA_URL.exec(url) : null;
  if (!data) return [];
  const [, type, payload = ''] = data;
  const bytes = Buffer.from(payload, 'base64');
  if (bytes.length > MAX_IMAGE_BYTES) {
    return [
      { path, message: `The image is ${bytes.length} bytes; at most ${MAX_IMAGE_BYTES} allowed` },
    ];
  }
  const messages =
    type === 'png'
      ? signatureProblem(bytes, PNG_SIGNATURE, 'PNG')
      : type === 'jpeg'
        ? signatureProblem(bytes, JPEG_SIGNATURE, 'JPEG')
        : svgProblems(bytes);
  return messages.map((message) => ({ path, message }));
}

function signatureProblem(bytes: Buffer, signature: Buffer, name: string): string[] {
  return bytes.subarray(0, signature.length).equals(signature)
    ? []
    : [`The data is not a ${name} image`];
}

/** One rule an SVG must not break: what it looks for in the decoded text, and what it says. */
interface SvgRule {
  test: (text: string) => boolean;
  message: string;
}

/** An element name, with or without a namespace prefix (`<svg:script>` is a script too). */
const element = (names: string) => new RegExp(`<([\\w.-]+:)?(${names})(?![\\w.-])`, 'i');

const SVG_RULES: SvgRule[] = [
  {
    // An internal DTD subset can define entities that expand into markup the rules never see.
    test: (t) => /<!ENTITY/i.test(t) || /<!DOCTYPE[^>[]*\[/i.test(t),
    message: 'An SVG may not declare entities',
  },
  { test: (t) => element('script').test(t), message: 'An SVG may not contain <script>' },
  {
    test: (t) => element('foreignObject|iframe|embed|object|handler|listener').test(t),
    message: 'An SVG may not embed other content (<foreignObject>, <iframe>, <embed>, <object>)',
  },
  {
    test: (t) => /http:\/\/www\.w3\.org\/1999\/xhtml/i.test(t),
    message: 'An SVG may not contain HTML elements',
  },
  {
    test: (t) => /[\s/"':]on[a-z]+\s*=/i.test(t),
    message: 'An SVG may not carry event handler attributes (on…=)',
  },
  {
    // URL parsers drop tabs and newlines, so `java&#9;script:` is still a script URL.
    test: (t) => /(java|vb)script:/i.test(t.replace(/[\s\p{Cc}]+/gu, '')),
    message: 'An SVG may not contain javascript: URLs',
  },
  {
    test: (t) => hrefValues(t).some((v) => !v.startsWith('#') && !/^data:/i.test(v)),
    message: 'An SVG may reference only its own elements (#id) or data: URLs through href',
  },
  {
    test: (t) => /@import/i.test(t) || /url\(\s*(?!\s*["']?\s*(#|data:))/i.test(t),
    message: 'An SVG may not load styles, fonts or images from elsewhere',
  },
];

function svgProblems(bytes: Buffer): string[] {
  const text = utf8(bytes);
  // Anything but UTF-8 (UTF-16 above all) would hide every marker below from these checks.
  if (
    text === undefined ||
    text.includes('\u0000') ||
    /encoding\s*=\s*["'](?!utf-8|us-ascii)/i.test(text)
  )
    return ['An SVG must be UTF-8 text'];
  if (!element('svg').test(text)) return ['The data is not an SVG image'];
  const decoded = decodeReferences(text);
  return SVG_RULES.filter((rule) => rule.test(decoded)).map((rule) => rule.message);
}

function utf8(bytes: Buffer): string | undefined {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/**
 * The text as the XML parser reads attribute values: character references and XML's five
 * named entities resolved, in one pass (`&amp;#106;` stays `&#106;`, as XML has it).
 */
function decodeReferences(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|amp|lt|gt|quot|apos);/gi, (whole, ref: string) => {
    if (ref[0] !== '#') return NAMED[ref.toLowerCase()] ?? whole;
    const code =
      ref[1] === 'x' || ref[1] === 'X'
        ? Number.parseInt(ref.slice(2), 16)
        : Number.parseInt(ref.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

/** Every `href` / `xlink:href` (any prefix) value; an unquoted one counts as its next word. */
function hrefValues(text: string): string[] {
  const values: string[] = [];
  const href = /(?:^|[\s/"':])(?:[\w.-]+:)?href\s*=\s*(?:"([^"]*)"|'([^']*)'|(\S*))/gi;
  for (const m of text.matchAll(href)) values.push((m[1] ?? m[2] ?? m[3] ?? '').trim());
  return values;
}
