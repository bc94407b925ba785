import { ago, canStop, fmtReward, sparklinePoints, statusText } from '../format';

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
