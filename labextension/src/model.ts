/**
 * The sidebar's data: one poll of the server extension (runs, adapters, clusters), with
 * exponential back-off on failure (`@lumino/polling`'s Poll), shared by the sidebar and the
 * status-bar item.
 */
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { APIError, RunsAPI } from './api';
import {
  IAdapterInfo,
  IClusterInfo,
  IRunsResponse,
  IRunSummary,
  IServerStatus
} from './models';

/** What the sidebar shows above the lists when something is off. */
export type Banner =
  | { kind: 'extension-missing'; message: string }
  | { kind: 'store-missing'; message: string; storeRoot?: string }
  | { kind: 'store-empty'; message: string }
  | { kind: 'error'; message: string }
  | null;

/** The banner for a successful poll (an empty store) or a failed one. */
export function bannerFor(
  data: IRunsResponse | null,
  error: unknown
): Banner {
  if (error instanceof APIError) {
    if (error.extensionMissing) {
      return {
        kind: 'extension-missing',
        message:
          'The hyperpod-rl server extension is not answering: install hyperpod-rl-jupyterlab in the ' +
          "Jupyter server's environment (pip install hyperpod-rl-jupyterlab), then restart the server " +
          '(jupyter server extension list shows it enabled).'
      };
    }
    if (error.storeMissing) {
      return { kind: 'store-missing', message: error.message };
    }
    return { kind: 'error', message: error.message };
  }
  if (error) {
    return {
      kind: 'error',
      message: `Cannot reach the Jupyter server (${String(error)}); retrying with back-off.`
    };
  }
  if (data && data.runs.length === 0) {
    return {
      kind: 'store-empty',
      message: `No runs yet in ${data.store_root}.`
    };
  }
  return null;
}

/** The banner when the status route says the store does not exist (no runs route is called). */
export function storeMissingBanner(status: IServerStatus): Banner {
  return {
    kind: 'store-missing',
    message: `No runs yet: the store ${status.store_root} does not exist on this server.`,
    storeRoot: status.store_root
  };
}

/** Poll timing in milliseconds. */
export interface IPollTiming {
  /** Interval between successful polls (ms). */
  intervalMs: number;
  /** Longest interval after repeated failures (ms). */
  maxMs: number;
}

export class RunsModel {
  constructor(
    readonly api: RunsAPI,
    timing: IPollTiming = { intervalMs: 5000, maxMs: 60000 }
  ) {
    this._poll = new Poll({
      auto: false,
      factory: () => this._refresh(),
      frequency: {
        interval: timing.intervalMs,
        backoff: true,
        max: Math.max(timing.maxMs, timing.intervalMs)
      },
      name: 'hyperpod-rl:runs',
      standby: 'when-hidden'
    });
  }

  /** Emitted after every poll, successful or not. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get runs(): IRunSummary[] {
    return this._data?.runs ?? [];
  }

  get running(): number {
    return this._data?.running ?? 0;
  }

  get adapters(): IAdapterInfo[] {
    return this._adapters;
  }

  get clusters(): IClusterInfo[] {
    return this._clusters;
  }

  get status(): IServerStatus | null {
    return this._status;
  }

  get banner(): Banner {
    return this._banner;
  }

  /** Failed polls in a row (the poll backs off while this grows). */
  get failures(): number {
    return this._failures;
  }

  /** The poll (its `frequency` can be changed when the settings change). */
  get poll(): Poll {
    return this._poll;
  }

  /** Start polling. */
  start(): Promise<void> {
    return this._poll.start();
  }

  /** Poll now and wait for the result. */
  async refresh(): Promise<void> {
    await this._poll.refresh();
    await this._poll.tick;
  }

  /** Change the interval (ms) from the settings. */
  setInterval(intervalMs: number, maxMs: number): void {
    this._poll.frequency = {
      interval: intervalMs,
      backoff: true,
      max: Math.max(maxMs, intervalMs)
    };
  }

  dispose(): void {
    this._poll.dispose();
  }

  private async _refresh(): Promise<void> {
    try {
      // The status route answers whether the store exists; without one there is nothing to
      // list, so the runs and adapters routes (503 then) are not called at all.
      const status = await this.api.status();
      if (!status.store_exists) {
        this._clusters = await this.api.clusters();
        this._status = status;
        this._data = null;
        this._adapters = [];
        this._failures = 0;
        this._banner = storeMissingBanner(status);
        this._changed.emit();
        return;
      }
      const data = await this.api.runs();
      const [adapters, clusters] = await Promise.all([
        this.api.adapters(),
        this.api.clusters()
      ]);
      this._data = data;
      this._adapters = adapters;
      this._clusters = clusters;
      this._status = status;
      this._failures = 0;
      this._banner = bannerFor(data, null);
    } catch (error) {
      this._failures += 1;
      this._banner = bannerFor(null, error);
      if (error instanceof APIError && (error.storeMissing || error.extensionMissing)) {
        this._data = null;
        this._adapters = [];
      }
      this._changed.emit();
      throw error; // the Poll backs off after a rejected tick
    }
    this._changed.emit();
  }

  private _data: IRunsResponse | null = null;
  private _adapters: IAdapterInfo[] = [];
  private _clusters: IClusterInfo[] = [];
  private _status: IServerStatus | null = null;
  private _banner: Banner = null;
  private _failures = 0;
  private _changed = new Signal<this, void>(this);
  private _poll: Poll;
}
