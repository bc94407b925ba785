/** A read-only panel with the tail of a run's job log, refreshed while it is open. */
import { MainAreaWidget } from '@jupyterlab/apputils';
import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import { RunsAPI } from './api';
import { formatLogLine } from './format';

export class LogsView extends Widget {
  constructor(
    readonly api: RunsAPI,
    readonly runId: string,
    intervalMs = 3000
  ) {
    super();
    this.addClass('hprl-logs-view');
    this._pre = document.createElement('pre');
    this._pre.className = 'hprl-logs-text';
    this.node.appendChild(this._pre);
    this._poll = new Poll({
      factory: () => this.load(),
      frequency: { interval: intervalMs, backoff: true, max: 60000 },
      name: `hyperpod-rl:logs:${runId}`,
      standby: 'when-hidden'
    });
  }

  /** Fetch the tail once and show it. */
  async load(): Promise<void> {
    try {
      const data = await this.api.logs(this.runId, 500);
      const head = `# ${data.submission_id ?? 'no submission'} (${data.source})${data.truncated ? ', last 500 lines' : ''}\n`;
      const atBottom =
        this.node.scrollTop + this.node.clientHeight >= this.node.scrollHeight - 4;
      this._pre.textContent = head + data.lines.map(formatLogLine).join('\n');
      if (atBottom) {
        this.node.scrollTop = this.node.scrollHeight;
      }
    } catch (error) {
      this._pre.textContent = `could not load the log: ${String((error as Error).message ?? error)}`;
      throw error;
    }
  }

  dispose(): void {
    this._poll.dispose();
    super.dispose();
  }

  private _pre: HTMLPreElement;
  private _poll: Poll;
}

/** A main-area panel for a run's log. */
export function logsPanel(api: RunsAPI, runId: string): MainAreaWidget<LogsView> {
  const content = new LogsView(api, runId);
  const panel = new MainAreaWidget({ content });
  panel.id = `hprl-logs-${runId}`;
  panel.title.label = `Logs: ${runId}`;
  panel.title.closable = true;
  return panel;
}
