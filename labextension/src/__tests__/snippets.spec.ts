import { IRunSummary } from '../models';
import {
  evaluateSnippet,
  metricsSnippet,
  reattachSnippet,
  serveSnippet,
  terminalSnippet
} from '../snippets';

const RUN: IRunSummary = {
  run_id: 'exp-1',
  status: 'running',
  status_detail: 'Ray job status RUNNING',
  step: 3,
  total_steps: 10,
  last_reward: 0.25,
  rewards: [0.1, 0.25],
  base_model_id: 'tiny-qwen3-vl',
  base_model_revision: 'abcdef0123456789',
  backend: 'reference',
  cluster: 'local',
  submission_id: 'hprl-exp-1-1',
  ray_status: 'RUNNING',
  created_at: 1,
  updated_at: 2,
  run_dir: '/data/it\'s "here"/runs/exp-1',
  has_adapter: false,
  in_ledger: true
};

describe('snippets', () => {
  it('opens a MetricsPanel on the run directory, quoted as a Python string', () => {
    const code = metricsSnippet(RUN);
    expect(code).toContain('import hyperpod_rl as hp');
    expect(code).toContain('hp.MetricsPanel(run_dir="/data/it\'s \\"here\\"/runs/exp-1")');
  });

  it('reattaches from the latest submission without replaying the log', () => {
    const code = reattachSnippet(RUN);
    expect(code).toContain('hp.latest_job(client, "exp-1", pathlib.Path(');
    expect(code).toContain('from_start=False');
  });

  it('serves and evaluates the run adapter', () => {
    expect(serveSnippet(RUN)).toContain('hp.serve_run(client, pathlib.Path(');
    expect(evaluateSnippet(RUN)).toContain('hp.evaluate_run(pathlib.Path(');
  });

  it('quotes a CLI path that needs it and defaults to hyperpod-rl', () => {
    expect(terminalSnippet(RUN, '')).toContain('hyperpod-rl job logs --follow exp-1');
    expect(terminalSnippet(RUN, '/opt/my env/bin/hyperpod-rl')).toContain(
      "'/opt/my env/bin/hyperpod-rl' job status exp-1"
    );
    expect(terminalSnippet(RUN, '~/.hyperpod-rl/venv/bin/hyperpod-rl')).toContain(
      '~/.hyperpod-rl/venv/bin/hyperpod-rl serve up exp-1'
    );
  });
});
