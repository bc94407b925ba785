/**
 * The Runs sidebar (left panel): runs newest first with status, step, last reward and a reward
 * sparkline; per-run actions; adapters with their promotion decision; clusters with dashboard
 * links; banners when the server extension is missing or the store is empty.
 */
import { ReactWidget } from '@jupyterlab/ui-components';
import * as React from 'react';

import { RunsModel } from './model';
import { IAdapterInfo, IClusterInfo, IRunSummary } from './models';
import {
  adapterDecision,
  ago,
  canStop,
  fmtReward,
  sparklinePoints
} from './format';

/** What the sidebar's buttons do (implemented by the plugin with JupyterLab's services). */
export interface IRunActions {
  stop(run: IRunSummary): void;
  logs(run: IRunSummary): void;
  openMetrics(run: IRunSummary): void;
  snippet(run: IRunSummary, kind: 'reattach' | 'serve' | 'evaluate'): void;
  openTutorial(): void;
  openSettings(): void;
  copyToken(cluster: IClusterInfo): void;
  refresh(): void;
}

function Sparkline(props: { values: number[] }): JSX.Element {
  const width = 80;
  const height = 18;
  const points = sparklinePoints(props.values, width, height);
  return (
    <svg
      className="hprl-sparkline"
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      aria-label={`reward over the last ${props.values.length} steps`}
    >
      {points && <polyline points={points} fill="none" strokeWidth={1.5} />}
    </svg>
  );
}

function RunRow(props: { run: IRunSummary; actions: IRunActions }): JSX.Element {
  const { run, actions } = props;
  const steps = run.total_steps ? `${run.step}/${run.total_steps}` : `${run.step}`;
  return (
    <li className="hprl-run" data-run-id={run.run_id} data-status={run.status}>
      <div className="hprl-run-head">
        <span
          className={`hprl-status hprl-status-${run.status}`}
          title={run.status_detail}
        >
          {run.status}
        </span>
        <span className="hprl-run-id" title={run.run_dir ?? ''}>
          {run.run_id}
        </span>
        <span className="hprl-run-age">{ago(run.created_at)}</span>
      </div>
      <div className="hprl-run-figures">
        <span title="last step / planned steps">step {steps}</span>
        <span title="reward/avg_raw_reward of the last step">
          reward {fmtReward(run.last_reward)}
        </span>
        <Sparkline values={run.rewards} />
      </div>
      <div className="hprl-run-meta">
        <span title={run.base_model_revision ?? ''}>
          {run.base_model_id ?? 'base model unknown'}
        </span>
        <span>
          {run.cluster ? `on ${run.cluster}` : 'no cluster'}
          {run.submission_id ? ` · ${run.submission_id}` : ''}
        </span>
      </div>
      <div className="hprl-run-actions">
        <button
          className="jp-mod-styled hprl-stop"
          disabled={!canStop(run.status)}
          onClick={() => actions.stop(run)}
        >
          Stop
        </button>
        <button
          className="jp-mod-styled hprl-logs"
          disabled={!run.submission_id}
          onClick={() => actions.logs(run)}
        >
          Logs
        </button>
        <button
          className="jp-mod-styled hprl-metrics"
          onClick={() => actions.openMetrics(run)}
        >
          Open metrics
        </button>
        <button
          className="jp-mod-styled hprl-snippet-reattach"
          onClick={() => actions.snippet(run, 'reattach')}
        >
          Reattach
        </button>
        <button
          className="jp-mod-styled hprl-snippet-serve"
          disabled={!run.has_adapter}
          onClick={() => actions.snippet(run, 'serve')}
        >
          Serve
        </button>
        <button
          className="jp-mod-styled hprl-snippet-evaluate"
          disabled={!run.has_adapter}
          onClick={() => actions.snippet(run, 'evaluate')}
        >
          Evaluate
        </button>
      </div>
    </li>
  );
}

function AdapterRow(props: { adapter: IAdapterInfo }): JSX.Element {
  const a = props.adapter;
  const decision = adapterDecision(a);
  const evals = Object.entries(a.evals)
    .map(([label, m]) =>
      m.solve_rate !== undefined ? `${label} solve ${m.solve_rate.toFixed(3)}` : label
    )
    .join(' · ');
  return (
    <li className="hprl-adapter" data-run-id={a.run_id}>
      <div>
        <span className="hprl-run-id">{a.run_id}</span>
        <span
          className={`hprl-decision hprl-decision-${decision.kind}`}
          title={decision.title}
        >
          {decision.label}
        </span>
      </div>
      <div className="hprl-run-meta">
        <span>
          base {a.base_model_id ?? '?'} @ {a.base_model_revision ?? '?'}
        </span>
        <span>{a.steps !== null ? `${a.steps} steps` : ''}</span>
      </div>
      {evals && <div className="hprl-run-meta">{evals}</div>}
    </li>
  );
}

function ClusterRow(props: {
  cluster: IClusterInfo;
  actions: IRunActions;
}): JSX.Element {
  const c = props.cluster;
  return (
    <li className="hprl-cluster" data-cluster={c.name}>
      <span className={`hprl-reachable-${c.reachable}`}>●</span>{' '}
      <span className="hprl-run-id">{c.name}</span> <span>({c.kind})</span>{' '}
      <span>{c.jobs_running} running</span>{' '}
      {c.dashboard_url ? (
        <a
          className="hprl-dashboard-link"
          href={c.dashboard_url}
          target="_blank"
          rel="noopener noreferrer"
          title={c.dashboard_note}
        >
          dashboard
        </a>
      ) : (
        <span title={c.dashboard_note}>no dashboard link</span>
      )}
      {c.token_copyable && (
        <button
          className="jp-mod-styled hprl-copy-token"
          title="Copy the Ray token the dashboard asks for"
          onClick={() => props.actions.copyToken(c)}
        >
          Copy token
        </button>
      )}
      {c.token_hint && <div className="hprl-token-hint">{c.token_hint}</div>}
      {c.detail && <div className="hprl-run-meta">{c.detail}</div>}
    </li>
  );
}

export function RunsPanel(props: {
  model: RunsModel;
  actions: IRunActions;
  cliPath?: string;
}): JSX.Element {
  const { model, actions } = props;
  const cli = props.cliPath?.trim() || 'hyperpod-rl';
  const [, setTick] = React.useState(0);
  React.useEffect(() => {
    const update = () => setTick(t => t + 1);
    model.changed.connect(update);
    return () => {
      model.changed.disconnect(update);
    };
  }, [model]);
  const banner = model.banner;
  return (
    <div className="hprl-panel">
      <div className="hprl-header">
        <h2>Hyperpod RL runs</h2>
        <button className="jp-mod-styled hprl-refresh" onClick={() => actions.refresh()}>
          Refresh
        </button>
      </div>
      {banner && (
        <div
          className={`hprl-banner hprl-banner-${banner.kind}`}
          role={banner.kind.startsWith('store-') ? 'status' : 'alert'}
        >
          {banner.message}
          {banner.kind.startsWith('store-') && (
            <>
              <div>
                Start with the tutorial (it trains a first run on a local Ray cluster), or run{' '}
                <code>{cli} quickstart</code> in a terminal
                {banner.kind === 'store-missing' &&
                  '; if your runs are elsewhere (e.g. /fsx/hyperpod-rl), set the store root'}
                .
              </div>
              <div className="hprl-banner-actions">
                <button
                  className="jp-mod-styled jp-mod-accept hprl-open-tutorial"
                  onClick={() => actions.openTutorial()}
                >
                  Open the tutorial
                </button>
                {banner.kind === 'store-missing' && (
                  <button
                    className="jp-mod-styled hprl-open-settings"
                    onClick={() => actions.openSettings()}
                  >
                    Set the store root
                  </button>
                )}
              </div>
            </>
          )}
        </div>
      )}
      <ul className="hprl-runs">
        {model.runs.map(run => (
          <RunRow key={run.run_id} run={run} actions={actions} />
        ))}
      </ul>
      <h3>Adapters</h3>
      {model.adapters.length === 0 ? (
        <p className="hprl-empty">No adapter exported yet.</p>
      ) : (
        <ul className="hprl-adapters">
          {model.adapters.map(a => (
            <AdapterRow key={a.run_id} adapter={a} />
          ))}
        </ul>
      )}
      <h3>Clusters</h3>
      {model.clusters.length === 0 ? (
        <p className="hprl-empty">
          No cluster recorded (<code>{cli} local start</code>, or HyperpodRL.clusters in the
          server config).
        </p>
      ) : (
        <ul className="hprl-clusters">
          {model.clusters.map(c => (
            <ClusterRow key={c.name} cluster={c} actions={actions} />
          ))}
        </ul>
      )}
    </div>
  );
}

/** The sidebar widget. */
export class RunsSidebar extends ReactWidget {
  constructor(
    readonly model: RunsModel,
    readonly actions: IRunActions,
    readonly cliPath: () => string = () => 'hyperpod-rl'
  ) {
    super();
    this.addClass('hprl-sidebar');
  }

  render(): JSX.Element {
    return (
      <RunsPanel model={this.model} actions={this.actions} cliPath={this.cliPath()} />
    );
  }
}
