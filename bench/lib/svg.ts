// A small line chart as a standalone SVG: measured step curves and reference
// lines over one time axis. Hand-written so the docs need no plotting library.

export interface Series {
  label: string;
  color: string;
  points: ReadonlyArray<readonly [x: number, y: number]>;
  /** Hold each value until the next sample (how a sampled status behaves). */
  step?: boolean;
  dashed?: boolean;
  width?: number;
}

export interface ChartOptions {
  title: string;
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  /** Vertical markers, e.g. T₀ and the law's T. */
  markers?: Array<{ x: number; label: string; color: string }>;
  width?: number;
  height?: number;
}

const escape = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** 1, 2 or 5 × 10^k: a tick step giving about `count` ticks over `span`. */
export function niceStep(span: number, count: number): number {
  const raw = span / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const scaled = raw / power;
  return (scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10) * power;
}

function format(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(Math.abs(value) < 1 ? 2 : 1);
}

export function lineChart(options: ChartOptions): string {
  const width = options.width ?? 860;
  const height = options.height ?? 480;
  const margin = {
    left: 72,
    right: 24,
    top: options.subtitle ? 64 : 44,
    bottom: 56 + 18 * Math.ceil(options.series.length / 2),
  };
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const xs = options.series.flatMap((s) => s.points.map((p) => p[0])).concat((options.markers ?? []).map((m) => m.x));
  const ys = options.series.flatMap((s) => s.points.map((p) => p[1]));
  const xMax = Math.max(...xs, 1e-9);
  const yMax = Math.max(...ys, 1e-9);
  const xStep = niceStep(xMax, 8);
  const yStep = niceStep(yMax, 5);
  const xTop = Math.ceil(xMax / xStep) * xStep;
  const yTop = Math.ceil((yMax * 1.05) / yStep) * yStep;
  const px = (x: number): number => margin.left + (x / xTop) * plotW;
  const py = (y: number): number => margin.top + plotH - (y / yTop) * plotH;

  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escape(options.title)}</text>`,
  );
  if (options.subtitle)
    out.push(`<text x="${width / 2}" y="42" text-anchor="middle" fill="#555">${escape(options.subtitle)}</text>`);

  for (let y = 0; y <= yTop + 1e-9; y += yStep) {
    out.push(
      `<line x1="${margin.left}" x2="${margin.left + plotW}" y1="${py(y).toFixed(1)}" y2="${py(y).toFixed(1)}" stroke="#e5e5e5"/>`,
    );
    out.push(
      `<text x="${margin.left - 8}" y="${(py(y) + 4).toFixed(1)}" text-anchor="end" fill="#333">${format(y)}</text>`,
    );
  }
  for (let x = 0; x <= xTop + 1e-9; x += xStep) {
    out.push(
      `<line x1="${px(x).toFixed(1)}" x2="${px(x).toFixed(1)}" y1="${margin.top}" y2="${margin.top + plotH}" stroke="#f0f0f0"/>`,
    );
    out.push(
      `<text x="${px(x).toFixed(1)}" y="${margin.top + plotH + 18}" text-anchor="middle" fill="#333">${format(x)}</text>`,
    );
  }
  out.push(`<rect x="${margin.left}" y="${margin.top}" width="${plotW}" height="${plotH}" fill="none" stroke="#888"/>`);
  out.push(
    `<text x="${margin.left + plotW / 2}" y="${margin.top + plotH + 38}" text-anchor="middle">${escape(options.xLabel)}</text>`,
  );
  out.push(
    `<text transform="translate(18 ${margin.top + plotH / 2}) rotate(-90)" text-anchor="middle">${escape(options.yLabel)}</text>`,
  );

  for (const marker of options.markers ?? []) {
    const x = px(marker.x).toFixed(1);
    out.push(
      `<line x1="${x}" x2="${x}" y1="${margin.top}" y2="${margin.top + plotH}" stroke="${marker.color}" stroke-dasharray="2 3"/>`,
    );
    out.push(`<text x="${Number(x) + 4}" y="${margin.top + 14}" fill="${marker.color}">${escape(marker.label)}</text>`);
  }

  for (const series of options.series) {
    const coords: string[] = [];
    series.points.forEach(([x, y], i) => {
      const previous = series.points[i - 1];
      if (series.step && previous !== undefined) coords.push(`${px(x).toFixed(1)},${py(previous[1]).toFixed(1)}`);
      coords.push(`${px(x).toFixed(1)},${py(y).toFixed(1)}`);
    });
    const dash = series.dashed ? ' stroke-dasharray="7 5"' : '';
    out.push(
      `<polyline fill="none" stroke="${series.color}" stroke-width="${series.width ?? 2}"${dash} points="${coords.join(' ')}"/>`,
    );
  }

  options.series.forEach((series, i) => {
    const x = margin.left + (i % 2) * (plotW / 2);
    const y = margin.top + plotH + 56 + Math.floor(i / 2) * 18;
    const dash = series.dashed ? ' stroke-dasharray="7 5"' : '';
    out.push(
      `<line x1="${x}" x2="${x + 28}" y1="${y - 4}" y2="${y - 4}" stroke="${series.color}" stroke-width="${series.width ?? 2}"${dash}/>`,
    );
    out.push(`<text x="${x + 34}" y="${y}">${escape(series.label)}</text>`);
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
