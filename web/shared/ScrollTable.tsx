import type { ReactNode } from 'react';

/**
 * A table that scrolls sideways on a narrow screen. The scrolling box is a named region that
 * takes keyboard focus, so it can be scrolled without a pointer (WCAG 2.1.1; axe's
 * scrollable-region-focusable).
 */
export function ScrollTable({ label, children }: { label: string; children: ReactNode }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: see above: a scrolling region must take focus
    <section className="table-scroll" aria-label={label} tabIndex={0}>
      <table>{children}</table>
    </section>
  );
}
