import { type QueryClient, useQueryClient } from '@tanstack/react-query';
import {
  createContext,
  type ReactNode,
  startTransition,
  useCallback,
  useContext,
  useEffect,
  useRef,
  useState,
} from 'react';
import { Navigate, useLocation, useNavigate } from 'react-router-dom';
import { type SignedInIdentity, svc, trackSession } from './api.ts';
import type { AppDefinition } from './routing.ts';
import { ErrorState } from './states.tsx';

/** Where the session stands: unknown until GET /api/auth/me answers at first load. */
type Boot = { kind: 'loading' } | { kind: 'ready' } | { kind: 'failed'; error: unknown };

export interface Auth {
  identity: SignedInIdentity | null;
  /** After a successful sign-in (the login answer carries the identity): go to `to`. */
  signedIn(identity: SignedInIdentity, to: string): void;
  /** POST /api/auth/logout, then /login with the flash (spec §5.9 item 5). */
  signOut(): Promise<void>;
  /** After a password change: must_change is cleared (spec §5.9 item 4). */
  passwordChanged(): void;
}

const AuthContext = createContext<Auth | null>(null);
export const AppContext = createContext<AppDefinition | null>(null);

export function useAuth(): Auth {
  const auth = useContext(AuthContext);
  if (!auth) throw new Error('useAuth outside AuthProvider');
  return auth;
}

export function useApp(): AppDefinition {
  const app = useContext(AppContext);
  if (!app) throw new Error('useApp outside AppContext');
  return app;
}

/** The signed-in identity, for pages under RequireSession. */
export function useIdentity(): SignedInIdentity {
  const { identity } = useAuth();
  if (!identity) throw new Error('useIdentity outside RequireSession');
  return identity;
}

/** Flash state carried to /login by navigation (never by URL, so a reload drops it). */
export interface LoginState {
  flash?: 'signed_out';
}

/**
 * Drops every cached answer of the session that ended (or of whoever signed in before), but
 * not the host's branding, which belongs to no session and keeps the page branded.
 */
function forgetSession(queries: QueryClient): void {
  queries.removeQueries({
    predicate: (q) => !(q.queryKey[0] === 'branding' && q.queryKey[1] === 'public'),
  });
}

/** The current location as a `next` value. */
function here(): string {
  return `${window.location.pathname}${window.location.search}`;
}

export function AuthProvider({ children }: { children: (auth: Auth) => ReactNode }) {
  const [identity, setIdentity] = useState<SignedInIdentity | null>(null);
  const [boot, setBoot] = useState<Boot>({ kind: 'loading' });
  // useNavigate's function changes with the location; the session's callbacks must not (the
  // first-load check would run again on every navigation).
  const navigateNow = useNavigate();
  const navigate = useRef(navigateNow);
  navigate.current = navigateNow;
  const queries = useQueryClient();

  /**
   * The identity and the location change in one transition (react-router navigates in a
   * transition): otherwise the page would render once with the new identity at the old
   * location, and its guard would navigate somewhere else first.
   */
  const moveTo = useCallback((next: SignedInIdentity | null, to: string, state?: LoginState) => {
    startTransition(() => {
      setIdentity(next);
      navigate.current(to, { replace: true, state });
    });
  }, []);

  // A 401 while signed in: the session ended (spec §5.9 item 7). Nothing of it is kept.
  const expired = useCallback(() => {
    forgetSession(queries);
    moveTo(null, `/login?expired=1&next=${encodeURIComponent(here())}`);
  }, [moveTo, queries]);

  const load = useCallback(async () => {
    setBoot({ kind: 'loading' });
    try {
      const res = await svc.auth.me();
      if (res.status === 200) {
        setIdentity(res.body.identity);
        trackSession(true, expired);
        setBoot({ kind: 'ready' });
      } else if (res.status === 401) {
        trackSession(false, expired);
        setBoot({ kind: 'ready' });
      } else setBoot({ kind: 'failed', error: res });
    } catch (error) {
      setBoot({ kind: 'failed', error });
    }
  }, [expired]);

  useEffect(() => {
    void load();
  }, [load]);

  const auth: Auth = {
    identity,
    signedIn(next, to) {
      forgetSession(queries);
      trackSession(true, expired);
      moveTo(next, to);
    },
    async signOut() {
      // Not an expiry: the 401 of an already ended session must not redirect with ?expired.
      trackSession(false);
      try {
        await svc.auth.logout();
      } catch (error) {
        trackSession(true, expired);
        throw error;
      }
      forgetSession(queries);
      moveTo(null, '/login', { flash: 'signed_out' });
    },
    passwordChanged() {
      setIdentity((current) => current && { ...current, must_change: false });
    },
  };

  // No page before the session is known: no flash of a page, nor of /login for a signed-in user.
  if (boot.kind === 'loading') return null;
  if (boot.kind === 'failed') {
    return (
      <main className="boot-error">
        <ErrorState error={boot.error} retry={() => void load()} />
      </main>
    );
  }
  return <AuthContext value={auth}>{children(auth)}</AuthContext>;
}

/**
 * The guard of every page but /login (spec §5.9 items 3 and 7): no session → /login (a deep
 * link is kept as `next`); must_change → /account/password from any route.
 */
export function RequireSession({ children }: { children: ReactNode }) {
  const { identity } = useAuth();
  const location = useLocation();
  if (!identity) {
    const target = `${location.pathname}${location.search}`;
    const next = target === '/' ? '' : `?next=${encodeURIComponent(target)}`;
    return <Navigate to={`/login${next}`} replace />;
  }
  if (identity.must_change && location.pathname !== '/account/password') {
    return <Navigate to="/account/password" replace />;
  }
  return children;
}
