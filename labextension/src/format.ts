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

/** The Adapters list's decision: a recorded promotion first, else the held-out comparison's verdict. */
export function adapterDecision(a: {
  promoted: boolean | null;
  promotion_reason: string | null;
  compared?: boolean | null;
  comparison_reason?: string | null;
}): { label: string; kind: string; title: string } {
  if (a.promoted !== null && a.promoted !== undefined) {
    return a.promoted
      ? { label: 'promoted', kind: 'promoted', title: a.promotion_reason ?? '' }
      : { label: 'not promoted', kind: 'not-promoted', title: a.promotion_reason ?? '' };
  }
  if (a.compared === false) {
    return {
      label: 'do not promote (evaluated)',
      kind: 'not-promoted',
      title: `${a.comparison_reason ?? ''} (eval/comparison.json; no promotion recorded)`
    };
  }
  if (a.compared === true) {
    return {
      label: 'beats base, not promoted yet',
      kind: 'compared',
      title: `${a.comparison_reason ?? ''} (hyperpod-rl serve promote records it)`
    };
  }
  return {
    label: 'not evaluated',
    kind: 'not-gated',
    title: 'no held-out comparison (eval/comparison.json) and no promotion decision yet'
  };
}

/** The prefix of a metrics line in a job log (hyperpod_rl.metrics.schema.METRIC_LOG_PREFIX). */
export const METRIC_LOG_PREFIX = 'HPRL_METRIC ';

/** A job-log line for the Logs panel: `HPRL_METRIC {json}` becomes one short line of its figures. */
export function formatLogLine(line: string): string {
  const at = line.indexOf(METRIC_LOG_PREFIX);
  if (at < 0) {
    return line;
  }
  try {
    const rec = JSON.parse(line.slice(at + METRIC_LOG_PREFIX.length));
    const v = (rec.values ?? {}) as { [k: string]: number };
    const parts = [
      `step ${rec.step}${rec.total_steps ? `/${rec.total_steps}` : ''}`
    ];
    const show: [string, string][] = [
      ['reward/avg_raw_reward', 'reward'],
      ['policy/policy_loss', 'loss'],
      ['policy/policy_kl', 'KL'],
      ['timing/step', 'step s']
    ];
    for (const [key, label] of show) {
      if (typeof v[key] === 'number') {
        parts.push(`${label} ${Number(v[key].toPrecision(3))}`);
      }
    }
    return `${line.slice(0, at)}[metrics] ${parts.join('  ')}`;
  } catch {
    return line;
  }
}
