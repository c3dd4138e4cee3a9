import { useId, useRef, useState } from 'react';

/**
 * A generated password, shown once (spec §5.9 item 6): a read-only field to copy it from. The
 * value lives only in the state of whoever renders this; once they drop it, it is gone.
 */
export function OneTimePassword({ password, label }: { password: string; label: string }) {
  const id = useId();
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<'yes' | 'no' | null>(null);
  async function copy() {
    field.current?.select();
    try {
      await navigator.clipboard.writeText(password);
      setCopied('yes');
    } catch {
      // No clipboard permission: the text is selected, the reader copies it themselves.
      setCopied('no');
    }
  }
  return (
    <div className="one-time">
      <label htmlFor={id}>{label}</label>
      <div className="copy-field">
        <input
          ref={field}
          id={id}
          readOnly
          value={password}
          spellCheck={false}
          autoComplete="off"
          onFocus={(e) => e.target.select()}
        />
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p className="field-hint" role="status">
        {copied === 'yes' && 'Copied.'}
        {copied === 'no' && 'Selected: copy it with your keyboard or menu.'}
      </p>
      <p className="hint">
        This password is shown only once. After you close this, it cannot be retrieved.
      </p>
    </div>
  );
}
