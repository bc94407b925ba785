/**
 * Calls to the server extension (routes under `<base_url>hyperpod-rl/`), through
 * `ServerConnection.makeRequest`, which adds the XSRF token and credentials JupyterLab uses.
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import {
  IAdapterInfo,
  IClusterInfo,
  IKernelsResponse,
  ILogsResponse,
  IRunSummary,
  IRunsResponse,
  IServerStatus,
  IStopResponse,
  ITutorialResponse
} from './models';

/** The server extension's URL namespace. */
export const API_NAMESPACE = 'hyperpod-rl';

/** An answer other than 2xx, with the server's `{message, reason}` when it sent one. */
export class APIError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string
  ) {
    super(message);
  }

  /** The route does not exist: the server extension is not installed or not enabled. */
  get extensionMissing(): boolean {
    return this.status === 404 && this.reason === '';
  }

  /** The storage root is missing on the server (503). */
  get storeMissing(): boolean {
    return this.status === 503 && this.reason === 'store-missing';
  }
}

/** Call one route; JSON in and out. */
export async function requestAPI<T>(
  endPoint: string,
  settings: ServerConnection.ISettings,
  init: RequestInit = {},
  query: { [key: string]: string | undefined } = {}
): Promise<T> {
  let url = URLExt.join(settings.baseUrl, API_NAMESPACE, endPoint);
  const params = Object.entries(query).filter(
    ([, v]) => v !== undefined && v !== ''
  ) as [string, string][];
  if (params.length) {
    url += '?' + new URLSearchParams(params).toString();
  }
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ServerConnection.NetworkError(error as TypeError);
  }
  const text = await response.text();
  let data: any = text;
  if (text.length) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!response.ok) {
    const message =
      (data && typeof data === 'object' && data.message) ||
      `HTTP ${response.status} from ${endPoint}`;
    const reason = (data && typeof data === 'object' && data.reason) || '';
    throw new APIError(response.status, String(message), String(reason));
  }
  return data as T;
}

/** Typed client of every route; `store` is the "store root" setting ('' = the server's default). */
export class RunsAPI {
  constructor(
    readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings(),
    public store: string = ''
  ) {}

  private get query() {
    return { store: this.store || undefined };
  }

  status(): Promise<IServerStatus> {
    return requestAPI('status', this.settings, {}, this.query);
  }

  runs(): Promise<IRunsResponse> {
    return requestAPI('runs', this.settings, {}, this.query);
  }

  run(runId: string): Promise<IRunSummary> {
    return requestAPI(
      `runs/${encodeURIComponent(runId)}`,
      this.settings,
      {},
      this.query
    );
  }

  logs(runId: string, lines = 200): Promise<ILogsResponse> {
    return requestAPI(`runs/${encodeURIComponent(runId)}/logs`, this.settings, {}, {
      ...this.query,
      lines: String(lines)
    });
  }

  stop(runId: string): Promise<IStopResponse> {
    return requestAPI(
      `runs/${encodeURIComponent(runId)}/stop`,
      this.settings,
      { method: 'POST' },
      this.query
    );
  }

  async adapters(): Promise<IAdapterInfo[]> {
    const data = await requestAPI<{ adapters: IAdapterInfo[] }>(
      'adapters',
      this.settings,
      {},
      this.query
    );
    return data.adapters;
  }

  async clusters(): Promise<IClusterInfo[]> {
    const data = await requestAPI<{ clusters: IClusterInfo[] }>(
      'clusters',
      this.settings,
      {},
      this.query
    );
    return data.clusters;
  }

  /** Copy the tutorial; the copies get `kernel` as their kernelspec. */
  tutorial(
    folder: string,
    kernel?: { name: string; display_name: string }
  ): Promise<ITutorialResponse> {
    return requestAPI('tutorial', this.settings, {
      method: 'POST',
      body: JSON.stringify({ folder, kernel })
    });
  }

  /** The kernels that can import hyperpod_rl and the one to use (`preferred`: the Kernel setting). */
  kernels(preferred: string): Promise<IKernelsResponse> {
    return requestAPI('kernels', this.settings, {}, { preferred });
  }

  /** A cluster's Ray token (for the Copy token button; never stored or logged). */
  async clusterToken(name: string): Promise<string> {
    const data = await requestAPI<{ token: string }>(
      `clusters/${encodeURIComponent(name)}/token`,
      this.settings,
      { method: 'POST' }
    );
    return data.token;
  }
}
