import {
  adapterDecision,
  ago,
  canStop,
  fmtReward,
  formatLogLine,
  sparklinePoints,
  statusText
} from '../format';

describe('sparklinePoints', () => {
  it('spans the box: first point at x=0, last at the width, max at the top', () => {
    const pts = sparklinePoints([0, 0.5, 1], 80, 18).split(' ');
    expect(pts).toEqual(['0,18', '40,9', '80,0']);
  });

  it('draws a flat series mid-height and nothing for no data', () => {
    expect(sparklinePoints([0.3, 0.3], 10, 10)).toBe('0,5 10,5');
    expect(sparklinePoints([], 10, 10)).toBe('');
  });

  it('centres a single point', () => {
    expect(sparklinePoints([2], 80, 18)).toBe('40,9');
  });
});

describe('small formatters', () => {
  it('says how long ago in the largest whole unit', () => {
    const now = 1_000_000 * 1000;
    expect(ago(1_000_000 - 5, now)).toBe('5 s ago');
    expect(ago(1_000_000 - 600, now)).toBe('10 min ago');
    expect(ago(1_000_000 - 7200, now)).toBe('2 h ago');
    expect(ago(1_000_000 - 3 * 86400, now)).toBe('3 d ago');
  });

  it('formats rewards and the status-bar text', () => {
    expect(fmtReward(null)).toBe('—');
    expect(fmtReward(0.12345)).toBe('0.123');
    expect(statusText(2)).toBe('RL: 2 running');
  });

  it('offers Stop only while a job can still be stopped', () => {
    expect(canStop('running')).toBe(true);
    expect(canStop('pending')).toBe(true);
    for (const s of ['succeeded', 'failed', 'stopped', 'unknown']) {
      expect(canStop(s)).toBe(false);
    }
  });
});

describe('adapterDecision', () => {
  it('shows a recorded promotion decision first', () => {
    expect(adapterDecision({ promoted: true, promotion_reason: 'wins' }).label).toBe('promoted');
    expect(
      adapterDecision({ promoted: false, promotion_reason: 'x', compared: true }).label
    ).toBe('not promoted');
  });

  it("shows the comparison's 'do not promote' when no decision was recorded (issue 31 item 7)", () => {
    const d = adapterDecision({
      promoted: null,
      promotion_reason: null,
      compared: false,
      comparison_reason: 'do not promote: the 95% interval ... does not exclude 0'
    });
    expect(d.label).toBe('do not promote (evaluated)');
    expect(d.kind).toBe('not-promoted');
    expect(d.title).toContain('do not promote: the 95% interval');
    expect(adapterDecision({ promoted: null, promotion_reason: null, compared: true }).kind).toBe(
      'compared'
    );
  });

  it('says not evaluated only when there is neither', () => {
    expect(
      adapterDecision({ promoted: null, promotion_reason: null, compared: null }).label
    ).toBe('not evaluated');
  });
});

describe('formatLogLine', () => {
  it('turns an HPRL_METRIC line into one short line of figures', () => {
    const rec = {
      run_id: 'r',
      step: 3,
      total_steps: 20,
      time_s: 1,
      values: {
        'reward/avg_raw_reward': -0.123456,
        'policy/policy_loss': 0.5,
        'timing/step': 12.3456,
        'x/other': 1
      }
    };
    expect(formatLogLine(`(pid=12) HPRL_METRIC ${JSON.stringify(rec)}`)).toBe(
      '(pid=12) [metrics] step 3/20  reward -0.123  loss 0.5  step s 12.3'
    );
  });

  it('leaves other lines and broken JSON alone', () => {
    expect(formatLogLine('INFO starting')).toBe('INFO starting');
    expect(formatLogLine('HPRL_METRIC {not json')).toBe('HPRL_METRIC {not json');
  });
});

describe('canStop', () => {
  it('is off for a run that was never submitted', () => {
    expect(canStop('created')).toBe(false);
  });
});
