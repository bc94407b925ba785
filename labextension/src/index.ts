/**
 * hyperpod-rl for JupyterLab: the Runs sidebar, the "RL: N running" status-bar item, the
 * "Hyperpod RL tutorial" launcher card and palette commands (Stop run, Open metrics, Open docs).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  Clipboard,
  Dialog,
  ICommandPalette,
  InputDialog,
  Notification,
  showDialog,
  showErrorMessage
} from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';
import {
  INotebookTracker,
  NotebookActions,
  NotebookPanel
} from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { RunsAPI } from './api';
import { chosenSpec, notebookTarget } from './kernel';
import { canStop, statusText } from './format';
import { logsPanel } from './logs';
import { RunsModel } from './model';
import { IClusterInfo, IKernelsResponse, IRunSummary } from './models';
import { IRunActions, RunsSidebar } from './sidebar';
import {
  evaluateSnippet,
  metricsSnippet,
  reattachSnippet,
  serveSnippet,
  terminalSnippet
} from './snippets';

export const PLUGIN_ID = 'hyperpod-rl-jupyterlab:plugin';
export const SIDEBAR_ID = 'hyperpod-rl-runs';

/** Command ids. */
export namespace CommandIDs {
  export const openSidebar = 'hyperpod-rl:open-sidebar';
  export const stopRun = 'hyperpod-rl:stop-run';
  export const openMetrics = 'hyperpod-rl:open-metrics';
  export const openDocs = 'hyperpod-rl:open-docs';
  export const openTutorial = 'hyperpod-rl:open-tutorial';
  export const showLogs = 'hyperpod-rl:show-logs';
  export const refresh = 'hyperpod-rl:refresh';
}

const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161"><path d="M3 19h18v2H3zM4 17l4-6 4 3 5-8 3 2-7 11-4-3-3 4z"/></g></svg>`;

export const hprlIcon = new LabIcon({
  name: 'hyperpod-rl-jupyterlab:icon',
  svgstr: ICON_SVG
});

interface ISettings {
  pollIntervalSeconds: number;
  storeRoot: string;
  cliPath: string;
  kernelName: string;
  tutorialFolder: string;
}

const DEFAULTS: ISettings = {
  pollIntervalSeconds: 5,
  storeRoot: '',
  cliPath: 'hyperpod-rl',
  kernelName: '',
  tutorialFolder: 'hyperpod-rl-tutorial'
};

/** The status-bar item: "RL: N running"; a click opens the sidebar. */
class RunningItem extends Widget {
  constructor(model: RunsModel, onClick: () => void) {
    super();
    this.addClass('hprl-statusbar');
    this.node.title = 'hyperpod-rl runs running now (click: Runs sidebar)';
    this.node.textContent = statusText(0);
    this.node.style.cursor = 'pointer';
    this.node.style.padding = '0 4px';
    this.node.onclick = onClick;
    model.changed.connect(() => {
      this.node.textContent = statusText(model.running);
    });
  }
}

async function insertAndRun(
  panel: NotebookPanel,
  source: string,
  run: boolean
): Promise<void> {
  await panel.context.ready;
  await panel.sessionContext.ready;
  const notebook = panel.content;
  const last = notebook.widgets.length - 1;
  notebook.activeCellIndex = Math.max(0, last);
  const active = notebook.activeCell;
  const empty =
    notebook.widgets.length === 1 &&
    active !== null &&
    active.model.sharedModel.getSource().trim() === '';
  if (!empty) {
    NotebookActions.insertBelow(notebook);
  }
  if (notebook.activeCell?.model.type !== 'code') {
    NotebookActions.changeCellType(notebook, 'code');
  }
  notebook.activeCell!.model.sharedModel.setSource(source);
  if (run) {
    await NotebookActions.run(notebook, panel.sessionContext);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Runs sidebar, status-bar item and tutorial launcher card for hyperpod-rl.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ILauncher, IStatusBar, ICommandPalette, ISettingRegistry],
  activate: async (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    launcher: ILauncher | null,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null
  ) => {
    const { commands, shell } = app;
    const settings: ISettings = { ...DEFAULTS };
    const api = new RunsAPI(ServerConnection.makeSettings(), '');
    const model = new RunsModel(api, {
      intervalMs: settings.pollIntervalSeconds * 1000,
      maxMs: settings.pollIntervalSeconds * 10000
    });

    const apply = (loaded: ISettingRegistry.ISettings) => {
      Object.assign(settings, DEFAULTS, loaded.composite as Partial<ISettings>);
      api.store = settings.storeRoot.trim();
      model.setInterval(
        settings.pollIntervalSeconds * 1000,
        settings.pollIntervalSeconds * 10000
      );
      void model.refresh();
    };
    if (settingRegistry) {
      try {
        const loaded = await settingRegistry.load(PLUGIN_ID);
        apply(loaded);
        loaded.changed.connect(apply);
      } catch (reason) {
        console.warn('hyperpod-rl: settings not loaded, using defaults', reason);
      }
    }

    const findRun = (runId: string): IRunSummary | undefined =>
      model.runs.find(r => r.run_id === runId);

    const pickRun = async (
      label: string,
      filter: (run: IRunSummary) => boolean
    ): Promise<IRunSummary | undefined> => {
      await model.refresh().catch(() => undefined);
      const items = model.runs.filter(filter).map(r => r.run_id);
      if (!items.length) {
        await showErrorMessage('Hyperpod RL', `No run to ${label}.`);
        return undefined;
      }
      const result = await InputDialog.getItem({ title: `Run to ${label}`, items });
      return result.button.accept && result.value ? findRun(result.value) : undefined;
    };

    const stopRun = async (run: IRunSummary): Promise<void> => {
      const answer = await showDialog({
        title: `Stop run ${run.run_id}?`,
        body:
          `Ray stops job ${run.submission_id} on ${run.cluster ?? 'its cluster'}. ` +
          'Resubmitting the run resumes from its last saved checkpoint if it saved one ' +
          '(checkpoint.interval > 0); otherwise it starts again from step 0.',
        buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Stop' })]
      });
      if (!answer.button.accept) {
        return;
      }
      try {
        const result = await api.stop(run.run_id);
        Notification.info(result.message, { autoClose: 5000 });
      } catch (error) {
        await showErrorMessage(`Could not stop ${run.run_id}`, String((error as Error).message));
      }
      await model.refresh().catch(() => undefined);
    };

    /** The server's answer on kernels, or null after telling the user what to fix. */
    const kernelsOrExplain = async (
      title: string
    ): Promise<IKernelsResponse | null> => {
      try {
        const kernels = await api.kernels(settings.kernelName.trim());
        if (!kernels.chosen) {
          await showErrorMessage(title, kernels.message);
          return null;
        }
        return kernels;
      } catch (error) {
        await showErrorMessage(title, String((error as Error).message));
        return null;
      }
    };

    /**
     * The notebook hyperpod-rl code goes into: the active one when its kernel can import
     * hyperpod_rl, else a new notebook on the chosen kernel (never the server's default one).
     */
    const targetPanel = async (title: string): Promise<NotebookPanel | null> => {
      const kernels = await kernelsOrExplain(title);
      if (!kernels) {
        return null;
      }
      const active = notebooks.currentWidget;
      const activeKernel =
        active?.sessionContext.session?.kernel?.name ??
        active?.sessionContext.kernelPreference.name;
      if (active && notebookTarget(activeKernel, kernels) === 'active') {
        return active;
      }
      return (await commands.execute('notebook:create-new', {
        kernelName: kernels.chosen
      })) as NotebookPanel;
    };

    const openMetrics = async (run: IRunSummary): Promise<void> => {
      const panel = await targetPanel('Hyperpod RL: Open metrics');
      if (!panel) {
        return;
      }
      shell.activateById(panel.id);
      await insertAndRun(panel, metricsSnippet(run), true);
    };

    const copyToken = async (cluster: IClusterInfo): Promise<void> => {
      try {
        const token = await api.clusterToken(cluster.name);
        try {
          await navigator.clipboard.writeText(token);
        } catch {
          Clipboard.copyToSystem(token);
        }
        Notification.success(
          `Copied the Ray token of ${cluster.name}: paste it where the dashboard asks for it.`,
          { autoClose: 5000 }
        );
      } catch (error) {
        await showErrorMessage(
          `No token for ${cluster.name}`,
          String((error as Error).message)
        );
      }
    };

    const showSnippet = async (
      run: IRunSummary,
      kind: 'reattach' | 'serve' | 'evaluate'
    ): Promise<void> => {
      const code =
        kind === 'reattach'
          ? reattachSnippet(run)
          : kind === 'serve'
            ? serveSnippet(run)
            : evaluateSnippet(run);
      const body = new Widget();
      const pre = document.createElement('pre');
      pre.className = 'hprl-snippet';
      pre.textContent = `${code}\n\n# from a terminal:\n${terminalSnippet(run, settings.cliPath)
        .split('\n')
        .map(l => `#   ${l}`)
        .join('\n')}`;
      body.node.appendChild(pre);
      const insert = Dialog.okButton({ label: 'Insert in notebook' });
      const copy = Dialog.createButton({ label: 'Copy' });
      const answer = await showDialog({
        title: `${kind[0].toUpperCase()}${kind.slice(1)} ${run.run_id}`,
        body,
        buttons: [Dialog.cancelButton({ label: 'Close' }), copy, insert]
      });
      if (answer.button.label === 'Copy') {
        Clipboard.copyToSystem(code);
      } else if (answer.button.accept) {
        const panel = await targetPanel(`Hyperpod RL: ${kind}`);
        if (!panel) {
          return;
        }
        shell.activateById(panel.id);
        await insertAndRun(panel, code, false);
      }
    };

    const openTutorial = async (): Promise<void> => {
      const title = 'Hyperpod RL tutorial';
      const kernels = await kernelsOrExplain(title);
      const spec = kernels && chosenSpec(kernels);
      if (!kernels || !spec) {
        return;
      }
      try {
        const result = await api.tutorial(settings.tutorialFolder, spec);
        const widget = await commands.execute('docmanager:open', {
          path: result.first,
          kernel: { name: spec.name }
        });
        // A copy from an earlier version keeps its old kernelspec: switch it to the right kernel.
        const panel = widget instanceof NotebookPanel ? widget : null;
        if (panel) {
          await panel.sessionContext.ready;
          const now = panel.sessionContext.session?.kernel?.name;
          if (notebookTarget(now, kernels) !== 'active') {
            await panel.sessionContext.changeKernel({ name: spec.name });
          }
        }
      } catch (error) {
        await showErrorMessage(title, String((error as Error).message));
      }
    };

    const actions: IRunActions = {
      stop: run => void stopRun(run),
      logs: run => void commands.execute(CommandIDs.showLogs, { runId: run.run_id }),
      openMetrics: run => void openMetrics(run),
      snippet: (run, kind) => void showSnippet(run, kind),
      openTutorial: () => void openTutorial(),
      openSettings: () =>
        void commands.execute('settingeditor:open', { query: 'Hyperpod RL' }),
      copyToken: cluster => void copyToken(cluster),
      refresh: () => void model.refresh().catch(() => undefined)
    };

    const sidebar = new RunsSidebar(model, actions, () => settings.cliPath);
    sidebar.id = SIDEBAR_ID;
    sidebar.title.icon = hprlIcon;
    sidebar.title.caption = 'Hyperpod RL runs';
    shell.add(sidebar, 'left', { rank: 600 });

    commands.addCommand(CommandIDs.openSidebar, {
      label: 'Hyperpod RL: Show Runs',
      execute: () => shell.activateById(SIDEBAR_ID)
    });
    commands.addCommand(CommandIDs.refresh, {
      label: 'Hyperpod RL: Refresh Runs',
      execute: () => model.refresh()
    });
    commands.addCommand(CommandIDs.stopRun, {
      label: 'Hyperpod RL: Stop Run…',
      execute: async args => {
        const run = args.runId
          ? findRun(String(args.runId))
          : await pickRun('stop', r => canStop(r.status));
        if (run) {
          await stopRun(run);
        }
      }
    });
    commands.addCommand(CommandIDs.openMetrics, {
      label: 'Hyperpod RL: Open Metrics…',
      execute: async args => {
        const run = args.runId
          ? findRun(String(args.runId))
          : await pickRun('open metrics of', () => true);
        if (run) {
          await openMetrics(run);
        }
      }
    });
    commands.addCommand(CommandIDs.showLogs, {
      label: 'Hyperpod RL: Show Run Logs',
      execute: args => {
        const runId = String(args.runId ?? '');
        if (!runId) {
          return;
        }
        const id = `hprl-logs-${runId}`;
        const existing = Array.from(shell.widgets('main')).find(w => w.id === id);
        if (existing) {
          shell.activateById(id);
          return;
        }
        const panel = logsPanel(api, runId);
        shell.add(panel, 'main', { mode: 'split-right' });
      }
    });
    commands.addCommand(CommandIDs.openTutorial, {
      label: 'Hyperpod RL tutorial',
      caption:
        'Copy the hyperpod-rl tutorial notebooks into your folder and open the first',
      icon: hprlIcon,
      execute: () => openTutorial()
    });
    commands.addCommand(CommandIDs.openDocs, {
      label: 'Hyperpod RL: Open Docs',
      execute: async () => {
        try {
          const result = await api.tutorial(settings.tutorialFolder);
          const docs = result.copied
            .concat(result.existing)
            .find(p => p.endsWith('docs/labextension.md'));
          await commands.execute('docmanager:open', {
            path: docs ?? result.first,
            factory: docs ? 'Markdown Preview' : undefined
          });
        } catch (error) {
          await showErrorMessage('Hyperpod RL docs', String((error as Error).message));
        }
      }
    });

    if (palette) {
      const category = 'Hyperpod RL';
      for (const command of [
        CommandIDs.openSidebar,
        CommandIDs.refresh,
        CommandIDs.stopRun,
        CommandIDs.openMetrics,
        CommandIDs.openDocs,
        CommandIDs.openTutorial
      ]) {
        palette.addItem({ command, category });
      }
    }
    if (launcher) {
      launcher.add({
        command: CommandIDs.openTutorial,
        category: 'Other',
        rank: 0
      });
    }
    if (statusBar) {
      statusBar.registerStatusItem('hyperpod-rl-jupyterlab:running', {
        item: new RunningItem(model, () => shell.activateById(SIDEBAR_ID)),
        align: 'left',
        rank: 50,
        isActive: () => true
      });
    }

    void model.start();
    console.log(`hyperpod-rl-jupyterlab is activated`);
  }
};

export default plugin;
