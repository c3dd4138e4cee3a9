import type { InputHTMLAttributes } from 'react';

/**
 * A labelled input with its hint and its error (spec §5.9 item 8: labelled inputs; the
 * error is tied to the input with aria-describedby and marks it aria-invalid).
 */
export function Field(
  props: {
    id: string;
    label: string;
    value: string;
    onValue: (value: string) => void;
    error?: string | undefined;
    hint?: string;
  } & Omit<InputHTMLAttributes<HTMLInputElement>, 'id' | 'value' | 'onChange'>,
) {
  const { id, label, value, onValue, error, hint, ...input } = props;
  const described = [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ');
  return (
    <>
      <label htmlFor={id}>{label}</label>
      <input
        {...input}
        id={id}
        value={value}
        onChange={(e) => onValue(e.target.value)}
        aria-invalid={error ? true : undefined}
        aria-describedby={described || undefined}
      />
      {hint && (
        <p id={`${id}-hint`} className="field-hint">
          {hint}
        </p>
      )}
      {error && (
        <p id={`${id}-error`} className="field-error">
          {error}
        </p>
      )}
    </>
  );
}
