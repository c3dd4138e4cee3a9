import { type FormEvent, useState } from 'react';
import { Link } from 'react-router-dom';
import { NetworkError, svc } from './api.ts';
import { useApp, useAuth } from './auth.tsx';
import { useDocumentTitle } from './branding.ts';
import {
  CURRENT_PASSWORD_INCORRECT,
  NETWORK_ERROR,
  PASSWORD_CHANGED,
  PASSWORD_TOO_SHORT,
  PASSWORD_TOO_WEAK,
  PASSWORD_UNCHANGED,
  PASSWORDS_DIFFER,
  RATE_LIMITED,
  SERVER_ERROR,
} from './texts.ts';

/** Spec §5.4 item 2, counted in code points as the server counts them. */
const MIN_LENGTH = 12;

function tooShort(password: string): boolean {
  return [...password].length < MIN_LENGTH;
}

function failureText(status: number, code: string | undefined): string {
  if (code === 'current_password_incorrect') return CURRENT_PASSWORD_INCORRECT;
  if (code === 'password_too_weak') return PASSWORD_TOO_WEAK;
  if (code === 'password_unchanged') return PASSWORD_UNCHANGED;
  if (code === 'validation_failed') return PASSWORD_TOO_SHORT;
  if (status === 429) return RATE_LIMITED;
  return SERVER_ERROR;
}

/**
 * `/account/password` (spec §5.9 items 3 and 4; the must-change banner is the Layout's): current, new, confirm; the length rule is the
 * only check made while typing (the server judges the rest); on success the other devices
 * are signed out and this one stays signed in.
 */
export function PasswordPage() {
  const auth = useAuth();
  const app = useApp();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [confirm, setConfirm] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [done, setDone] = useState(false);
  const [busy, setBusy] = useState(false);
  useDocumentTitle('Change password');
  const short = next.length > 0 && tooShort(next);

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (busy) return;
    setDone(false);
    if (tooShort(next)) return setError(PASSWORD_TOO_SHORT);
    if (next !== confirm) return setError(PASSWORDS_DIFFER);
    setBusy(true);
    setError(null);
    try {
      const res = await svc.auth.changePassword({
        body: { current_password: current, new_password: next },
      });
      if (res.status === 200) {
        setCurrent('');
        setNext('');
        setConfirm('');
        setDone(true);
        auth.passwordChanged();
      } else setError(failureText(res.status, res.body.code));
    } catch (failure) {
      setError(failure instanceof NetworkError ? NETWORK_ERROR : SERVER_ERROR);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="narrow">
      <h1>Change password</h1>
      {done && (
        <div className="notice" role="status">
          <p>{PASSWORD_CHANGED}</p>
          <p>
            <Link to={app.landing}>Continue</Link>
          </p>
        </div>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      <form onSubmit={submit}>
        <label htmlFor="password-current">Current password</label>
        <input
          id="password-current"
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onChange={(e) => setCurrent(e.target.value)}
        />
        <label htmlFor="password-new">New password</label>
        <input
          id="password-new"
          type="password"
          autoComplete="new-password"
          required
          aria-invalid={short}
          aria-describedby="password-new-rule"
          value={next}
          onChange={(e) => setNext(e.target.value)}
        />
        <p id="password-new-rule" className={short ? 'field-error' : 'field-hint'}>
          {short ? PASSWORD_TOO_SHORT : 'At least 12 characters.'}
        </p>
        <label htmlFor="password-confirm">Confirm new password</label>
        <input
          id="password-confirm"
          type="password"
          autoComplete="new-password"
          required
          value={confirm}
          onChange={(e) => setConfirm(e.target.value)}
        />
        <button className="primary" type="submit" aria-busy={busy}>
          Change password
        </button>
      </form>
    </section>
  );
}
