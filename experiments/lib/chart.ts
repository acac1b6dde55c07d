// A line chart as an SVG string: title, axes with ticks, one polyline per series, a legend, and optional vertical
// markers (e.g. the step the echo-trap warning fired). Rasterised to PNG by png.ts.
import type { Series } from './analysis';

export interface ChartSeries {
  label: string;
  points: Series;
  dashed?: boolean;
}

export interface ChartMarker {
  step: number;
  label: string;
}

export interface ChartSpec {
  title: string;
  xLabel?: string;
  yLabel: string;
  series: ChartSeries[];
  markers?: ChartMarker[];
  /** Fixed y range; default: from the data (0 included when all values are >= 0). */
  yMin?: number;
  yMax?: number;
  width?: number;
  height?: number;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** About five round tick values covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

const fmt = (v: number) => (Math.abs(v) >= 1000 ? v.toFixed(0) : Number(v.toPrecision(3)).toString());

export function lineChartSvg(spec: ChartSpec): string {
  const W = spec.width ?? 800,
    H = spec.height ?? 380;
  const m = { left: 64, right: 250, top: 40, bottom: 48 };
  const pw = W - m.left - m.right,
    ph = H - m.top - m.bottom;
  const all = spec.series.flatMap((s) => s.points);
  const xs = all.map(([x]) => x),
    ys = all.map(([, y]) => y);
  const xMin = xs.length ? Math.min(...xs) : 0,
    xMax = xs.length ? Math.max(...xs, xMin + 1) : 1;
  let yMin = spec.yMin ?? (ys.length ? Math.min(...ys) : 0);
  let yMax = spec.yMax ?? (ys.length ? Math.max(...ys) : 1);
  if (spec.yMin === undefined && yMin >= 0) yMin = 0;
  if (!(yMax > yMin)) yMax = yMin + 1;
  const X = (x: number) => m.left + ((x - xMin) / (xMax - xMin)) * pw;
  const Y = (y: number) => m.top + ph - ((y - yMin) / (yMax - yMin)) * ph;

  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="DejaVu Sans, Liberation Sans, Arial, sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${m.left}" y="24" font-size="15" font-weight="bold">${esc(spec.title)}</text>`,
  ];
  for (const t of niceTicks(yMin, yMax)) {
    parts.push(
      `<line x1="${m.left}" x2="${m.left + pw}" y1="${Y(t)}" y2="${Y(t)}" stroke="#e5e5e5"/>`,
      `<text x="${m.left - 6}" y="${Y(t) + 4}" text-anchor="end">${fmt(t)}</text>`,
    );
  }
  // Training steps are whole numbers: no tick at step 0.5 on a short run.
  const xTicks = niceTicks(xMin, xMax).filter((t) => !xs.every(Number.isInteger) || Number.isInteger(t));
  for (const t of xTicks) {
    parts.push(
      `<line x1="${X(t)}" x2="${X(t)}" y1="${m.top + ph}" y2="${m.top + ph + 5}" stroke="#333"/>`,
      `<text x="${X(t)}" y="${m.top + ph + 18}" text-anchor="middle">${fmt(t)}</text>`,
    );
  }
  parts.push(
    `<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`,
    `<text x="${m.left + pw / 2}" y="${H - 10}" text-anchor="middle">${esc(spec.xLabel ?? 'training step')}</text>`,
    `<text transform="translate(16 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(spec.yLabel)}</text>`,
  );
  spec.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    if (s.points.length) {
      const d = s.points.map(([x, y]) => `${X(x).toFixed(1)},${Y(y).toFixed(1)}`).join(' ');
      parts.push(
        `<polyline class="series" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''} points="${d}"/>`,
      );
      if (s.points.length <= 20)
        for (const [x, y] of s.points)
          parts.push(`<circle cx="${X(x).toFixed(1)}" cy="${Y(y).toFixed(1)}" r="2.5" fill="${color}"/>`);
    }
    const ly = m.top + 8 + i * 20;
    parts.push(
      `<line x1="${m.left + pw + 12}" x2="${m.left + pw + 36}" y1="${ly}" y2="${ly}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`,
      `<text x="${m.left + pw + 42}" y="${ly + 4}">${esc(s.label)}</text>`,
    );
  });
  for (const mk of spec.markers ?? []) {
    if (mk.step < xMin || mk.step > xMax) continue;
    parts.push(
      `<line class="marker" x1="${X(mk.step)}" x2="${X(mk.step)}" y1="${m.top}" y2="${m.top + ph}" stroke="#555" stroke-dasharray="3 3"/>`,
      `<text x="${X(mk.step) + 4}" y="${m.top + 14}" fill="#555" font-size="11">${esc(mk.label)}</text>`,
    );
  }
  parts.push('</svg>');
  return parts.join('\n');
}
