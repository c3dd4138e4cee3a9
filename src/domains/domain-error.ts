/**
 * An error a domain rule raises on purpose: the caller asked for something the rules refuse
 * (no such tenant, an illegal transition, a busy tenant). `code` is stable and public: it is
 * the problem's `code` (docs/errors.md), and the HTTP layer turns a domain error into a
 * problem+json answer through one table, never by hand in a router.
 */
export abstract class DomainError extends Error {
  abstract readonly code: string;
}
