import { readFileSync } from 'node:fs';
import { assetPath } from '../assets/index.ts';

/**
 * What NIST SP 800-63B §5.1.1.2 asks of a chosen password beyond its length (the 12..1024 rule
 * is in passwords.ts): it must not be blank, hold control characters or be a commonly used
 * one. Checked wherever a person chooses a password (change, `svc auth set-password`,
 * `create-admin`); generated ones never need it.
 *
 * The list is the `passwords-common` dictionary of @zxcvbn-ts/language-common 4.1.3 (MIT;
 * passwords ranked by frequency in public breach corpora), kept as a file so the server
 * neither depends on nor decompresses the package at run time. Only the entries this policy
 * can ever match are kept: those of 12 or more characters (a whole password) and those of 4 or
 * more that start and end with a letter (the word inside `Summer2024!!`). docs/auth.md says why.
 */
const COMMON = new Set(
  readFileSync(assetPath('commonPasswords'), 'utf8')
    .split('\n')
    .filter((line) => line !== ''),
);

/** Whitespace, control and default-ignorable (invisible) characters only. */
const BLANK = /^[\p{White_Space}\p{Cc}\p{Default_Ignorable_Code_Point}]*$/u;
/** Digits, punctuation, symbols and spaces around the word people pad to reach a minimum. */
const PADDING = /^[^\p{L}]+|[^\p{L}]+$/gu;
const MIN_WORD = 4;
/**
 * Tabs, newlines, escapes: nothing a person types into a password field, and a pasted or piped
 * line break would make a password that cannot be typed again (docs/auth.md "Password policy").
 */
const CONTROL = /\p{Cc}/u;

export type PasswordWeakness = 'whitespace_only' | 'control_character' | 'common_password';

/** Why a chosen password is refused, or undefined when it may be used. */
export function passwordWeakness(password: string): PasswordWeakness | undefined {
  if (BLANK.test(password)) return 'whitespace_only';
  if (CONTROL.test(password)) return 'control_character';
  const lower = password.toLowerCase();
  if (COMMON.has(lower)) return 'common_password';
  const word = lower.replace(PADDING, '');
  if ([...word].length >= MIN_WORD && COMMON.has(word)) return 'common_password';
  return undefined;
}
