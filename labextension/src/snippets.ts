/**
 * Code a user runs for a run: pure functions over the run's wire model, so they are unit-tested.
 *
 * Python snippets use hyperpod-rl's public API (`import hyperpod_rl as hp`); they name the run
 * by its directory, so they work whatever the kernel's storage root; terminal snippets use the
 * CLI at the "CLI path" setting. `tests/labextension/test_snippets_run.py` executes them.
 */
import { IRunSummary } from './models';

/** A Python string literal (JSON's escaping is valid Python for these paths and ids). */
export function pyStr(value: string): string {
  return JSON.stringify(value);
}

function runDirOf(run: IRunSummary): string {
  return run.run_dir ?? `<storage root>/runs/${run.run_id}`;
}

/** The cell "Open metrics" inserts and runs: a live MetricsPanel following the run. */
export function metricsSnippet(run: IRunSummary): string {
  return [
    'import hyperpod_rl as hp',
    '',
    `hp.MetricsPanel(run_dir=${pyStr(runDirOf(run))})  # live charts of run ${run.run_id}`
  ].join('\n');
}

/** Reattach from a kernel: find the run's newest job (run directory or cluster) and follow it from now on. */
export function reattachSnippet(run: IRunSummary): string {
  return [
    'import pathlib',
    'import hyperpod_rl as hp',
    '',
    'client = hp.start_local_cluster().job_client()  # reuses the running local cluster',
    `job = hp.latest_job(client, ${pyStr(run.run_id)}, pathlib.Path(${pyStr(runDirOf(run))}))`,
    'for update in hp.follow_run(client, job.submission_id, from_start=False):',
    '    for record in update.records:',
    '        print(record.step, record.values.get("reward/avg_raw_reward"))',
    '    if update.terminal:',
    '        print(update.status, update.message)'
  ].join('\n');
}

/** Serve the run's adapter on the local cluster (Ray Serve, preflight first). */
export function serveSnippet(run: IRunSummary): string {
  return [
    'import pathlib',
    'import hyperpod_rl as hp',
    '',
    'client = hp.start_local_cluster().job_client()  # reuses the running local cluster',
    `url, reports = hp.serve_run(client, pathlib.Path(${pyStr(runDirOf(run))}))`,
    'url'
  ].join('\n');
}

/** Evaluate the adapter on the run's held-out mazes and record it in the run. */
export function evaluateSnippet(run: IRunSummary): string {
  return [
    'import pathlib',
    'import hyperpod_rl as hp',
    '',
    `result = hp.evaluate_run(pathlib.Path(${pyStr(runDirOf(run))}))  # saved as eval/adapter.json`,
    'result'
  ].join('\n');
}

/** The same from a terminal, through the CLI. */
export function terminalSnippet(run: IRunSummary, cliPath: string): string {
  const cli = cliPath.trim() || 'hyperpod-rl';
  const quoted = /^~?[\w@%+=:,./-]+$/.test(cli) ? cli : `'${cli.replace(/'/g, `'\\''`)}'`;
  return [
    `${quoted} job status ${run.run_id}`,
    `${quoted} job logs --follow ${run.run_id}`,
    `${quoted} serve up ${run.run_id}`
  ].join('\n');
}
