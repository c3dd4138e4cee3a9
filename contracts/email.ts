import Type from 'typebox';

/**
 * THE email rule for new addresses (docs/auth.md "Email addresses"); normaliseEmail in
 * src/domains/users/user-repository.ts is the one normalisation, email_skeleton in sql/0012 the look-alike check.
 * ASCII only and in canonical lower case, which makes a mixed-script look-alike of an address
 * impossible: the local part is an RFC 5322 dot-atom (a-z 0-9 ! # $ % & ' * + / = ? ^ _ ` { | }
 * ~ - with single dots between atoms), the domain LDH labels of 1–63 characters with no hyphen
 * at either end, at least one dot, and a top-level label that starts with a letter; an
 * internationalised domain is written in its A-label (`xn--…`) form. No control characters,
 * spaces, quotes, angle brackets or bidi overrides can match. No look-ahead in the pattern:
 * test-data generators that read the OpenAPI document handle it badly.
 */
const ATEXT = "[a-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const TOP_LABEL = '[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?';
const EMAIL_PATTERN = `^${ATEXT}(?:\\.${ATEXT})*@(?:${LABEL}\\.)+${TOP_LABEL}$`;
/** RFC 5321's path limit, and the users.email CHECK (sql/0003). */
const EMAIL_MAX_LENGTH = 254;

export const Email = Type.String({ pattern: EMAIL_PATTERN, maxLength: EMAIL_MAX_LENGTH });
