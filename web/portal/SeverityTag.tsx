import { SEVERITY_COLORS, SEVERITY_LABELS, type Severity } from './terms.ts';

/** A severity as its word and a coloured mark: the colour is never the only cue. */
export function SeverityTag({ severity }: { severity: Severity }) {
  return (
    <span className="severity">
      {/* Set through the CSSOM, which the Content-Security-Policy allows (docs/web.md). */}
      <span
        className="severity-mark"
        aria-hidden="true"
        style={{ background: SEVERITY_COLORS[severity] }}
      />
      {SEVERITY_LABELS[severity]}
    </span>
  );
}
