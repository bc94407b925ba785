/**
 * Code a user runs for a run: pure functions over the run's wire model, so they are unit-tested.
 *
 * Python snippets use hyperpod-rl's public API (`import hyperpod_rl as hp`,
 * `hyperpod_rl.widgets.MetricsPanel`, which takes the run directory); terminal snippets use the
 * CLI at the "CLI path" setting.
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
    'from hyperpod_rl.widgets import MetricsPanel',
    '',
    `MetricsPanel(${pyStr(runDirOf(run))})  # live charts of run ${run.run_id}`
  ].join('\n');
}

/** Reattach from a kernel: follow the latest submission from where it is now. */
export function reattachSnippet(run: IRunSummary): string {
  return [
    'import pathlib',
    'import hyperpod_rl as hp',
    '',
    `run_dir = pathlib.Path(${pyStr(runDirOf(run))})`,
    'client = hp.start_local_cluster().job_client()  # reuses the running local cluster',
    'for update in hp.follow_run(client, hp.latest_submission(run_dir), from_start=False):',
    '    for record in update.records:',
    '        print(record.step, record.values.get("reward/avg_raw_reward"))',
    '    if update.terminal:',
    '        print(update.status, update.message)'
  ].join('\n');
}

/** Serve the run's adapter on the local cluster (Ray Serve). */
export function serveSnippet(run: IRunSummary): string {
  return [
    'import pathlib',
    'import hyperpod_rl as hp',
    '',
    `run_dir = pathlib.Path(${pyStr(runDirOf(run))})`,
    'config = hp.RunConfig.model_validate_json((run_dir / "config.json").read_text())',
    'url = hp.deploy_local(hp.start_local_cluster().job_client(), config.model.path, {"maze": run_dir / "adapter"})',
    'url'
  ].join('\n');
}

/** Evaluate the adapter on the run's held-out mazes and record it in the run. */
export function evaluateSnippet(run: IRunSummary): string {
  return [
    'import pathlib',
    'import hyperpod_rl as hp',
    'from hyperpod_rl.train.reference import read_rows',
    '',
    `run_dir = pathlib.Path(${pyStr(runDirOf(run))})`,
    'config = hp.RunConfig.model_validate_json((run_dir / "config.json").read_text())',
    'result = hp.evaluate(config.model.path, read_rows(config.data.heldout_path), adapter_path=run_dir / "adapter", label="adapter")',
    'result.save(run_dir / "eval" / "adapter.json")',
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
