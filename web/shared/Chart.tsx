import { useEffect, useId, useRef, useState } from 'react';
import type uPlot from 'uplot';
import './chart.css';

export interface ChartSeries {
  label: string;
  /** A colour that reads on both the light and the dark surface (non-text contrast ≥ 3:1). */
  color: string;
  /** One value per label; null leaves a gap (or no bar). */
  values: readonly (number | null)[];
  /** Bars only: a colour per bar (a severity's own colour), instead of `color` for all. */
  barColors?: readonly string[];
}

export interface ChartProps {
  /** The figure's caption, and the name screen readers give it. */
  title: string;
  /** One sentence with what the chart shows (totals, peak), under the caption. */
  summary: string;
  kind: 'line' | 'bars';
  /** The x positions in order: dates, rule ids, severities. */
  labels: readonly string[];
  /** The heading of the label column in the data table. */
  labelHeader: string;
  series: readonly ChartSeries[];
  height?: number;
}

/**
 * uPlot and its stylesheet are fetched the first time a chart mounts, so the apps' initial
 * script never carries them (docs/web.md "Budgets"). One promise for the whole app.
 */
let uplotModule: Promise<typeof uPlot> | undefined;
function loadUplot(): Promise<typeof uPlot> {
  uplotModule ??= Promise.all([import('uplot'), import('uplot/dist/uPlot.min.css')]).then(
    ([m]) => m.default,
  );
  return uplotModule;
}

const DARK = '(prefers-color-scheme: dark)';

/** The canvas cannot read CSS variables, so it takes the theme's colours when it is built. */
function themeColors(element: Element): { text: string; grid: string } {
  const style = getComputedStyle(element);
  return {
    text: style.getPropertyValue('--muted').trim() || '#52525b',
    grid: style.getPropertyValue('--border').trim() || '#d4d4d8',
  };
}

function integerLabels(labels: readonly string[]) {
  return (_: uPlot, splits: number[]) =>
    splits.map((i) => (Number.isInteger(i) ? (labels[i] ?? '') : ''));
}

/** Per-bar colours are uPlot's "display facet" of unit Color (3); the widths stay uniform. */
function barOptions(series: ChartSeries): uPlot.Series.BarsPathBuilderOpts {
  const colors = series.barColors;
  if (!colors) return { size: [0.7, 64] };
  return {
    size: [0.7, 64],
    disp: { fill: { unit: 3 as uPlot.Series.BarsPathBuilderFacetUnit, values: () => [...colors] } },
  };
}

function plotOptions(
  props: ChartProps,
  UPlot: typeof uPlot,
  width: number,
  colors: { text: string; grid: string },
): uPlot.Options {
  const bars = props.kind === 'bars';
  const barPaths = UPlot.paths.bars;
  const axis = {
    stroke: colors.text,
    grid: { stroke: colors.grid, width: 1 },
    ticks: { show: false },
  };
  return {
    width,
    height: props.height ?? 220,
    // Positions are indices, so days, rules and severities all sit on whole-number ticks.
    scales: {
      x: {
        time: false,
        ...(bars && { range: (_u, min, max): uPlot.Range.MinMax => [min - 0.5, max + 0.5] }),
      },
      y: { range: (_u, _min, max): uPlot.Range.MinMax => [0, Math.max(1, max)] },
    },
    axes: [
      { ...axis, values: integerLabels(props.labels), incrs: [1, 2, 5, 7, 10, 14, 30] },
      { ...axis, incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000] },
    ],
    // A legend names series; one series is named by the caption already.
    legend: { show: props.series.length > 1, live: false },
    cursor: { drag: { x: false, y: false } },
    series: [
      { label: props.labelHeader },
      ...props.series.map((s) => ({
        label: s.label,
        stroke: s.color,
        width: bars ? 0 : 2,
        ...(bars && barPaths && { fill: s.color, paths: barPaths(barOptions(s)) }),
        points: { show: !bars && props.labels.length <= 31 },
      })),
    ],
  };
}

function plotData(props: ChartProps): uPlot.AlignedData {
  return [props.labels.map((_, i) => i), ...props.series.map((s) => [...s.values])];
}

/**
 * A small chart (uPlot on a canvas) that is a figure with a caption for everyone and a table
 * for screen readers: the canvas is hidden from assistive technology, the table carries the
 * same numbers. It follows the container's width and the reader's colour scheme.
 */
export function Chart(props: ChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const captionId = useId();
  const [failed, setFailed] = useState(false);
  const [scheme, setScheme] = useState(() => matchMedia(DARK).matches);
  const key = JSON.stringify([props.kind, props.labels, props.series, props.height]);

  useEffect(() => {
    const media = matchMedia(DARK);
    const change = () => setScheme(media.matches);
    media.addEventListener('change', change);
    return () => media.removeEventListener('change', change);
  }, []);

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for the props' content (the arrays are new on every render); `scheme` rebuilds the canvas in the new colours
  useEffect(() => {
    const element = host.current;
    if (!element || props.labels.length === 0) return;
    let plot: uPlot | undefined;
    let cancelled = false;
    const resize = new ResizeObserver(() =>
      plot?.setSize({ width: element.clientWidth, height: props.height ?? 220 }),
    );
    loadUplot().then(
      (UPlot) => {
        if (cancelled) return;
        const options = plotOptions(props, UPlot, element.clientWidth, themeColors(element));
        plot = new UPlot(options, plotData(props), element);
        resize.observe(element);
      },
      () => setFailed(true),
    );
    return () => {
      cancelled = true;
      resize.disconnect();
      plot?.destroy();
    };
  }, [key, scheme]);

  return (
    <figure className="chart" aria-labelledby={captionId}>
      <figcaption id={captionId}>
        <span className="chart-title">{props.title}</span>
        <span className="chart-summary">{props.summary}</span>
      </figcaption>
      {props.labels.length > 0 && <div className="chart-canvas" ref={host} aria-hidden="true" />}
      {/* Without its script the chart is its table, for every reader. */}
      {failed && <p className="hint">The chart could not be loaded; here are its numbers.</p>}
      {/* A table ignores `overflow`, so the box that hides it is a div around it. */}
      <div
        className={failed ? 'chart-table' : 'visually-hidden'}
        hidden={props.labels.length === 0}
      >
        <table className="chart-data">
          <caption>{props.title}</caption>
          <thead>
            <tr>
              <th scope="col">{props.labelHeader}</th>
              {props.series.map((s) => (
                <th scope="col" key={s.label}>
                  {s.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {props.labels.map((label, i) => (
              <tr key={label}>
                <th scope="row">{label}</th>
                {props.series.map((s) => (
                  <td key={s.label}>{s.values[i] ?? '–'}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </figure>
  );
}
