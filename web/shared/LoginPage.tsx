import { type FormEvent, useEffect, useRef, useState } from 'react';
import { Navigate, useLocation, useNavigate, useSearchParams } from 'react-router-dom';
import { NetworkError, svc } from './api.ts';
import { type LoginState, useApp, useAuth } from './auth.tsx';
import { useDocumentTitle, useLook } from './branding.ts';
import { sameOriginPath } from './routing.ts';
import {
  INVALID_CREDENTIALS,
  LOST_ACCESS_HINT,
  lockedMessage,
  NETWORK_ERROR,
  RATE_LIMITED,
  SERVER_ERROR,
  SESSION_EXPIRED,
  SIGN_IN,
  SIGNED_OUT,
} from './texts.ts';

/** What a sign-in answer means to the reader (spec §5.9 item 2: no user enumeration). */
function failureText(status: number, body: unknown): string {
  if (status === 401 || status === 400) return INVALID_CREDENTIALS;
  if (status === 423) return lockedMessage(String((body as { unlock_at?: string }).unlock_at));
  if (status === 429) return RATE_LIMITED;
  return SERVER_ERROR;
}

/**
 * `/login` (spec §5.9 items 1, 2, 7, 8): labelled email and password, focus on email, Enter
 * submits through the form, one `Sign in.` button; errors in role=alert; a network failure
 * keeps what was typed; `next` is followed only when it is a path of this origin.
 */
export function LoginPage() {
  const app = useApp();
  const auth = useAuth();
  const look = useLook();
  const location = useLocation();
  const [params] = useSearchParams();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The flash and the expiry notice explain how the reader got here, until they try again.
  const [attempted, setAttempted] = useState(false);
  const passwordField = useRef<HTMLInputElement>(null);
  useDocumentTitle('Sign in');
  // The sign-out flash is read once, then dropped from the history entry: browsers keep an
  // entry's state across a reload, and a reloaded page must not say it again.
  const navigate = useNavigate();
  const [flashed] = useState(() => (location.state as LoginState | null)?.flash === 'signed_out');
  useEffect(() => {
    if ((location.state as LoginState | null)?.flash)
      navigate(`${location.pathname}${location.search}`, { replace: true, state: null });
  }, [location, navigate]);

  if (auth.identity) {
    return <Navigate to={auth.identity.must_change ? '/account/password' : app.landing} replace />;
  }
  const flash = !attempted && flashed;
  const expired = !attempted && params.get('expired') === '1';

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setAttempted(true);
    setError(null);
    try {
      const res = await svc.auth.login({ body: { email: email.trim(), password } });
      if (res.status === 200) {
        const next = sameOriginPath(params.get('next'));
        auth.signedIn(
          res.body.identity,
          res.body.must_change ? '/account/password' : (next ?? app.landing),
        );
        return;
      }
      setError(failureText(res.status, res.body));
      // A wrong or locked password is retyped; what else was typed stays.
      if (res.status === 401 || res.status === 423) {
        setPassword('');
        passwordField.current?.focus();
      }
    } catch (failure) {
      // The form keeps everything: the next attempt is one Enter away.
      setError(failure instanceof NetworkError ? NETWORK_ERROR : SERVER_ERROR);
    } finally {
      setBusy(false);
    }
  }

  return (
    <main className="login" id="main">
      <div className="login-card">
        <div className="brand login-brand">
          {look.logo_url && <img className="brand-logo" src={look.logo_url} alt="" />}
          <span className="brand-name">{look.app_name}</span>
        </div>
        <h1>Sign in</h1>
        {expired && !flash && (
          <p className="notice" role="status">
            {SESSION_EXPIRED}
          </p>
        )}
        {flash && (
          <p className="notice" role="status">
            {SIGNED_OUT}
          </p>
        )}
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <form onSubmit={submit}>
          <label htmlFor="login-email">Email</label>
          <input
            id="login-email"
            name="email"
            type="email"
            autoComplete="username"
            required
            // biome-ignore lint/a11y/noAutofocus: spec §5.9 item 1 puts the initial focus on email.
            autoFocus
            value={email}
            onChange={(e) => setEmail(e.target.value)}
          />
          <label htmlFor="login-password">Password</label>
          <input
            id="login-password"
            name="password"
            type="password"
            autoComplete="current-password"
            required
            ref={passwordField}
            value={password}
            onChange={(e) => setPassword(e.target.value)}
          />
          <button className="primary" type="submit" aria-busy={busy}>
            {SIGN_IN}
          </button>
        </form>
        <p className="hint">{LOST_ACCESS_HINT}</p>
        <p className="app-kind">{app.kind === 'mssp' ? 'MSSP console' : 'Customer portal'}</p>
      </div>
    </main>
  );
}
