import { useEffect, useId, useRef, useState } from 'react';
import { Link } from 'react-router-dom';
import { useAuth, useIdentity } from './auth.tsx';
import { errorText } from './states.tsx';
import { CHANGE_PASSWORD, ROLE_LABELS, SIGN_OUT } from './texts.ts';

/**
 * The account menu (spec §5.9 item 5): email, role label, change password, Sign out. A
 * disclosure (button + panel), not an ARIA menu: its entries are a link and a button, reached
 * with Tab in natural order; Escape closes it and returns focus to its button.
 */
export function AccountMenu() {
  const identity = useIdentity();
  const auth = useAuth();
  const [open, setOpen] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const panelId = useId();
  const root = useRef<HTMLDivElement>(null);
  const toggle = useRef<HTMLButtonElement>(null);

  useEffect(() => {
    if (!open) return;
    const outside = (event: PointerEvent) => {
      if (!root.current?.contains(event.target as Node)) setOpen(false);
    };
    const onKey = (event: KeyboardEvent) => {
      if (event.key !== 'Escape') return;
      setOpen(false);
      toggle.current?.focus();
    };
    document.addEventListener('pointerdown', outside);
    document.addEventListener('keydown', onKey);
    return () => {
      document.removeEventListener('pointerdown', outside);
      document.removeEventListener('keydown', onKey);
    };
  }, [open]);

  async function signOut() {
    setError(null);
    try {
      await auth.signOut();
    } catch (failure) {
      setError(errorText(failure));
    }
  }

  return (
    <div className="account" ref={root}>
      <button
        type="button"
        className="account-toggle"
        aria-expanded={open}
        aria-controls={panelId}
        ref={toggle}
        onClick={() => setOpen(!open)}
      >
        <span className="account-email">{identity.email}</span>
      </button>
      <div className="account-panel" id={panelId} hidden={!open}>
        <p className="account-who">
          <span className="account-email">{identity.email}</span>
          <span className="account-role">{ROLE_LABELS[identity.role]}</span>
        </p>
        <Link to="/account/password" onClick={() => setOpen(false)}>
          {CHANGE_PASSWORD}
        </Link>
        <button type="button" onClick={() => void signOut()}>
          {SIGN_OUT}
        </button>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
      </div>
    </div>
  );
}
