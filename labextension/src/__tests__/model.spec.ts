import { ServerConnection } from '@jupyterlab/services';

import { APIError, RunsAPI } from '../api';
import { bannerFor, RunsModel } from '../model';
import { IRunsResponse } from '../models';

type Route = (url: URL, init: RequestInit) => { status: number; body: unknown };

/** A RunsAPI whose fetch answers from `route` and records every request. */
function apiWith(route: Route): { api: RunsAPI; calls: { url: URL; init: RequestInit }[] } {
  const calls: { url: URL; init: RequestInit }[] = [];
  const fetchFn = async (input: RequestInfo, init: RequestInit = {}) => {
    const url = new URL(typeof input === 'string' ? input : input.url);
    const method = typeof input === 'string' ? init.method : input.method;
    calls.push({ url, init: { ...init, method } });
    const { status, body } = route(url, { ...init, method });
    return new Response(JSON.stringify(body), {
      status,
      headers: { 'Content-Type': 'application/json' }
    });
  };
  const settings = ServerConnection.makeSettings({
    baseUrl: 'http://localhost:8888/jupyterlab/default/',
    fetch: fetchFn as any,
    Request: Request as any,
    Headers: Headers as any
  });
  return { api: new RunsAPI(settings, '/fsx/hyperpod-rl'), calls };
}

const RUNS: IRunsResponse = {
  runs: [
    {
      run_id: 'exp-2',
      status: 'running',
      status_detail: 'Ray job status RUNNING',
      step: 4,
      total_steps: 8,
      last_reward: 0.5,
      rewards: [0.1, 0.5],
      base_model_id: 'm',
      base_model_revision: 'r',
      backend: 'reference',
      cluster: 'local',
      submission_id: 'hprl-exp-2-1',
      ray_status: 'RUNNING',
      created_at: 2,
      updated_at: 3,
      run_dir: '/fsx/hyperpod-rl/runs/exp-2',
      has_adapter: false,
      in_ledger: false
    }
  ],
  running: 1,
  store_root: '/fsx/hyperpod-rl',
  generated_at: 3
};

function okRoute(url: URL): { status: number; body: unknown } {
  const path = url.pathname.replace('/jupyterlab/default/hyperpod-rl/', '');
  switch (path) {
    case 'runs':
      return { status: 200, body: RUNS };
    case 'adapters':
      return { status: 200, body: { adapters: [] } };
    case 'clusters':
      return { status: 200, body: { clusters: [] } };
    case 'status':
      return {
        status: 200,
        body: { version: '0.1.0', store_exists: true, store_root: '/fsx/hyperpod-rl' }
      };
    default:
      return { status: 404, body: { message: 'no route' } };
  }
}

describe('RunsAPI', () => {
  it('calls routes under the base URL with the store setting and POSTs stop', async () => {
    const { api, calls } = apiWith((url, init) =>
      url.pathname.endsWith('/stop')
        ? {
            status: 200,
            body: {
              run_id: 'exp-2',
              submission_id: 'hprl-exp-2-1',
              stopped: true,
              ray_status: 'RUNNING',
              message: 'stopping'
            }
          }
        : okRoute(url)
    );
    const runs = await api.runs();
    expect(runs.running).toBe(1);
    expect(calls[0].url.pathname).toBe('/jupyterlab/default/hyperpod-rl/runs');
    expect(calls[0].url.searchParams.get('store')).toBe('/fsx/hyperpod-rl');
    const stop = await api.stop('exp-2');
    expect(stop.stopped).toBe(true);
    expect(calls[1].init.method).toBe('POST');
    expect(calls[1].url.pathname).toBe('/jupyterlab/default/hyperpod-rl/runs/exp-2/stop');
  });

  it('turns the server message and reason into an APIError', async () => {
    const { api } = apiWith(() => ({
      status: 503,
      body: { message: 'the storage root /x does not exist', reason: 'store-missing' }
    }));
    await expect(api.runs()).rejects.toMatchObject({
      status: 503,
      storeMissing: true,
      message: 'the storage root /x does not exist'
    });
  });
});

describe('bannerFor', () => {
  it('tells a missing server extension (a bare 404) from a missing store', () => {
    expect(bannerFor(null, new APIError(404, 'Not Found', ''))?.kind).toBe(
      'extension-missing'
    );
    expect(bannerFor(null, new APIError(404, 'no run x', 'not-found'))?.kind).toBe(
      'error'
    );
    const missing = bannerFor(null, new APIError(503, 'no store at /x', 'store-missing'));
    expect(missing).toEqual({ kind: 'store-missing', message: 'no store at /x' });
  });

  it('says the store is empty, and nothing when there are runs', () => {
    expect(bannerFor({ ...RUNS, runs: [] }, null)?.kind).toBe('store-empty');
    expect(bannerFor(RUNS, null)).toBeNull();
  });
});

describe('RunsModel', () => {
  it('polls runs, adapters, clusters and status and emits changed', async () => {
    const { api, calls } = apiWith(url => okRoute(url));
    const model = new RunsModel(api, { intervalMs: 60000, maxMs: 60000 });
    let emitted = 0;
    model.changed.connect(() => (emitted += 1));
    await model.refresh();
    expect(model.running).toBe(1);
    expect(model.runs.map(r => r.run_id)).toEqual(['exp-2']);
    expect(model.banner).toBeNull();
    expect(emitted).toBe(1);
    const paths = calls.map(c => c.url.pathname.split('/').pop()).sort();
    expect(paths).toEqual(['adapters', 'clusters', 'runs', 'status']);
    model.dispose();
  });

  it('never calls the runs or adapters routes (no 503s) when the store does not exist', async () => {
    const { api, calls } = apiWith(url =>
      url.pathname.endsWith('/status')
        ? { status: 200, body: { version: '0.1.0', store_exists: false, store_root: '/home/u/.local/share/hyperpod-rl/storage' } }
        : okRoute(url)
    );
    const model = new RunsModel(api, { intervalMs: 60000, maxMs: 60000 });
    await model.refresh();
    expect(calls.map(c => c.url.pathname.split('/').pop()).sort()).toEqual(['clusters', 'status']);
    expect(model.banner).toEqual({
      kind: 'store-missing',
      message: 'No runs yet: the store /home/u/.local/share/hyperpod-rl/storage does not exist on this server.',
      storeRoot: '/home/u/.local/share/hyperpod-rl/storage'
    });
    expect(model.failures).toBe(0);
    model.dispose();
  });

  it('shows the extension-missing banner and counts failures when the routes 404', async () => {
    const { api } = apiWith(() => ({ status: 404, body: '' }));
    const model = new RunsModel(api, { intervalMs: 60000, maxMs: 60000 });
    await model.refresh().catch(() => undefined);
    expect(model.banner?.kind).toBe('extension-missing');
    expect(model.failures).toBeGreaterThanOrEqual(1);
    expect(model.runs).toEqual([]);
    model.dispose();
  });
});
