/** Small pure helpers for the sidebar (unit-tested). */

/** An SVG polyline `points` attribute for a sparkline of `values` in a `width` x `height` box. */
export function sparklinePoints(
  values: number[],
  width: number,
  height: number
): string {
  if (values.length === 0) {
    return '';
  }
  const min = Math.min(...values);
  const max = Math.max(...values);
  const span = max - min || 1;
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values
    .map((v, i) => {
      const x = values.length > 1 ? i * step : width / 2;
      const y = max === min ? height / 2 : height - ((v - min) / span) * height;
      return `${round(x)},${round(y)}`;
    })
    .join(' ');
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

/** "3 s ago", "5 min ago", "2 h ago", "4 d ago" from Unix seconds. */
export function ago(unixS: number, nowMs: number = Date.now()): string {
  const s = Math.max(0, nowMs / 1000 - unixS);
  if (s < 60) {
    return `${Math.round(s)} s ago`;
  }
  if (s < 3600) {
    return `${Math.round(s / 60)} min ago`;
  }
  if (s < 86400) {
    return `${Math.round(s / 3600)} h ago`;
  }
  return `${Math.round(s / 86400)} d ago`;
}

/** A reward with 3 significant decimals, or an em dash. */
export function fmtReward(value: number | null): string {
  return value === null || value === undefined ? '—' : value.toFixed(3);
}

/** The status-bar text. */
export function statusText(running: number): string {
  return `RL: ${running} running`;
}

/** Statuses in which Stop makes sense. */
export function canStop(status: string): boolean {
  return status === 'running' || status === 'pending';
}
