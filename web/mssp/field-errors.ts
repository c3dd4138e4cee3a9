import { ApiError } from '../shared/api.ts';
import { errorText } from '../shared/states.tsx';

/**
 * A problem's per-field messages (docs/errors.md `validation_failed`, `invalid_policy`:
 * `errors: [{path, message}]`, JSON pointers into the body), keyed by pointer, and what is
 * left for the form's own alert: the problem's title when no field claims a message.
 */
export interface FormProblem {
  fields: Record<string, string>;
  summary: string | null;
}

interface FieldError {
  path: string;
  message: string;
}

function isFieldError(value: unknown): value is FieldError {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as FieldError).path === 'string' &&
    typeof (value as FieldError).message === 'string'
  );
}

/**
 * The problem's own title where it tells the reader something to act on (a 4xx, or a 503 such
 * as `cluster_unavailable`); the shared texts otherwise (403, 500, no answer).
 */
function problemTitle(error: unknown): string {
  if (error instanceof ApiError && error.status !== 403 && error.status !== 500) {
    return error.problem.title;
  }
  return errorText(error);
}

/**
 * `known` are the pointers the form has a field for; a message at a deeper pointer goes to
 * the nearest known ancestor (`/branding/primary_color` to `/branding` when only that exists).
 */
export function formProblem(error: unknown, known: readonly string[]): FormProblem {
  if (!error) return { fields: {}, summary: null };
  const fields: Record<string, string> = {};
  const unplaced: string[] = [];
  // Problems carry extra members per code (additionalProperties: true in contracts/route.ts).
  const extra = error instanceof ApiError ? (error.problem as Record<string, unknown>).errors : [];
  const listed: unknown[] = Array.isArray(extra) ? extra : [];
  for (const item of listed.filter(isFieldError)) {
    const owner = known
      .filter((k) => item.path === k || item.path.startsWith(`${k}/`))
      .sort((a, b) => b.length - a.length)[0];
    if (owner && !fields[owner]) fields[owner] = item.message;
    else if (!owner) unplaced.push(`${item.path || 'body'}: ${item.message}`);
  }
  const placed = Object.keys(fields).length > 0;
  const title = problemTitle(error);
  const detail = error instanceof ApiError ? error.problem.detail : undefined;
  const summary = placed
    ? unplaced.length > 0
      ? `${title} ${unplaced.join('; ')}`
      : 'Correct the marked fields.'
    : [title, detail, ...unplaced].filter(Boolean).join(' ');
  return { fields, summary };
}
