// Every text the spec fixes (§5.9), verbatim and in one place: the pages read them from here
// and the browser tests assert them from here. Texts the spec leaves open follow below.

/** §5.9 item 1: the one button of /login. */
export const SIGN_IN = 'Sign in.';

/** §5.9 item 2: wrong email or password, one message for both (no user enumeration). */
export const INVALID_CREDENTIALS = 'Email or password is incorrect.';
/** §5.9 item 2, with `{unlock_time}` filled by lockedMessage. */
export const LOCKED = 'This account is temporarily locked. Try again at {unlock_time}.';
export const SERVER_ERROR = 'Something went wrong. Try again.';
export const NETWORK_ERROR = "Couldn't reach the server. Check your connection and try again.";
/** §5.9 item 2: the hint line under the form; there is no self-service reset link. */
export const LOST_ACCESS_HINT = "Contact your administrator if you've lost access.";

/** §5.9 item 5: the flash on /login after Sign out. */
export const SIGNED_OUT = 'You have been signed out.';
/** §5.9 item 7: /login?expired=1, for absolute and idle expiry alike. */
export const SESSION_EXPIRED = 'Your session expired. Please sign in again.';

/** §5.9 item 3: the banner while must_change is set. */
export const MUST_CHANGE_BANNER =
  'Your administrator requires you to choose a new password before you continue.';
/** §5.9 item 4: after a successful change; this device stays signed in. */
export const PASSWORD_CHANGED = 'Your password has been changed. Other devices were signed out.';
/** §5.9 item 4: the inline check, the only rule checked before submitting. */
export const PASSWORD_TOO_SHORT = 'Use at least 12 characters.';
/** §5.9 item 5: the account menu's entries. */
export const CHANGE_PASSWORD = 'Change password';
export const SIGN_OUT = 'Sign out';

/** The unlock time as the reader's clock shows it (hours and minutes, their locale). */
export function lockedMessage(unlockAt: string | Date): string {
  const time = new Date(unlockAt).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  return LOCKED.replace('{unlock_time}', time);
}

// Texts the spec leaves to us (docs/web.md).

/** 429 on sign-in: the per-address or per-email window is spent (docs/auth.md). */
export const RATE_LIMITED = 'Too many sign-in attempts. Wait a few minutes and try again.';
export const PASSWORDS_DIFFER = 'The new password and its confirmation differ.';
export const CURRENT_PASSWORD_INCORRECT = 'The current password is incorrect.';
export const PASSWORD_TOO_WEAK = 'This password is too easy to guess. Choose another.';
export const PASSWORD_UNCHANGED = 'Choose a password different from the current one.';
export const NOT_ALLOWED = 'Your role does not give access to this page.';
export const NOT_FOUND = 'There is no page at this address.';
export const WRONG_APP_MSSP =
  'This is the customer portal. MSSP staff sign in to the MSSP console instead.';
export const WRONG_APP_TENANT =
  'This is the MSSP console. Customers sign in to their own portal instead.';
export const SKIP_TO_CONTENT = 'Skip to content';
/** 409 `stale_version` on an incident edit (docs/investigations.md "Concurrency"): nothing was saved. */
export const STALE_INCIDENT = 'This incident changed since you opened it.';

/** The role labels of the account menu (§5.9 item 5). */
export const ROLE_LABELS = {
  platform_admin: 'Platform admin',
  mssp_admin: 'MSSP admin',
  analyst: 'Analyst',
  customer_viewer: 'Customer viewer',
} as const;
