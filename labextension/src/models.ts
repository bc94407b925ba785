/**
 * Wire models: the JSON the server extension returns. Each interface mirrors, field for field,
 * a dataclass in `hyperpod_rl_jupyterlab/models.py` (tests/labextension/test_models_match_ts.py
 * diffs the names). Times are Unix seconds.
 */

/** Every status a run can show (see hyperpod_rl_jupyterlab/status.py for the rule). */
export type RunStatus =
  | 'created'
  | 'pending'
  | 'running'
  | 'succeeded'
  | 'failed'
  | 'stopped'
  | 'lost'
  | 'unknown';

/** One run as the sidebar lists it (Python: RunSummary). */
export interface IRunSummary {
  /** The run id (`<storage root>/runs/<run_id>`). */
  run_id: string;
  /** pending / running / succeeded / failed / stopped / lost / unknown. */
  status: RunStatus;
  /** Which source decided the status, one sentence. */
  status_detail: string;
  /** Last step with metrics (0 before the first). */
  step: number;
  /** Planned steps (0 when unknown). */
  total_steps: number;
  /** `reward/avg_raw_reward` of the last step. */
  last_reward: number | null;
  /** Reward of the most recent steps (at most 60), oldest first. */
  rewards: number[];
  /** Base model id. */
  base_model_id: string | null;
  /** Base model revision (hub commit or content hash). */
  base_model_revision: string | null;
  /** `reference` or `skyrl`. */
  backend: string | null;
  /** Cluster whose job API knows the latest submission. */
  cluster: string | null;
  /** Latest Ray submission id (`hprl-<run_id>-<n>`). */
  submission_id: string | null;
  /** Ray's job status of that submission, when a reachable cluster knows it. */
  ray_status: string | null;
  /** When the run started (Unix s). */
  created_at: number;
  /** Last change seen (Unix s). */
  updated_at: number;
  /** The run directory on the server's file system (null: ledger only). */
  run_dir: string | null;
  /** The run exported an adapter. */
  has_adapter: boolean;
  /** The run ledger has a row for it. */
  in_ledger: boolean;
}

/** A trained adapter and its promotion decision (Python: AdapterInfo). */
export interface IAdapterInfo {
  run_id: string;
  /** The adapter directory. */
  path: string;
  /** sha256 of adapter_model.safetensors. */
  sha256: string | null;
  /** Training steps behind it. */
  steps: number | null;
  base_model_id: string | null;
  base_model_revision: string | null;
  /** The promotion decision; null when never gated. */
  promoted: boolean | null;
  promotion_reason: string | null;
  /** ISO 8601 UTC. */
  decided_at: string | null;
  /** Evaluation label -> metric -> value. */
  evals: { [label: string]: { [metric: string]: number } };
  /** eval/comparison.json's verdict ("promote" / "do not promote"); null without one. */
  compared: boolean | null;
  comparison_reason: string | null;
}

/** A Ray cluster the project knows (Python: ClusterInfo). */
export interface IClusterInfo {
  name: string;
  /** `local` or `hyperpod`. */
  kind: string;
  /** Its job API answered with the token. */
  reachable: boolean;
  /** A link the browser can open (through the server proxy for local ports), or null. */
  dashboard_url: string | null;
  /** What the link needs, one sentence. */
  dashboard_note: string;
  /** hyperpod-rl jobs running on it now. */
  jobs_running: number;
  /** Why it is unreachable, or ''. */
  detail: string;
  /** Where the token the dashboard asks for is (never the token). */
  token_hint: string;
  /** POST clusters/<name>/token returns it (the Copy token button). */
  token_copyable: boolean;
}

/** GET runs (Python: RunsResponse). */
export interface IRunsResponse {
  runs: IRunSummary[];
  running: number;
  store_root: string;
  generated_at: number;
}

/** GET runs/<id>/logs (Python: LogsResponse). */
export interface ILogsResponse {
  run_id: string;
  submission_id: string | null;
  lines: string[];
  truncated: boolean;
  /** `ray:<cluster>` or `none`. */
  source: string;
}

/** POST runs/<id>/stop (Python: StopResponse). */
export interface IStopResponse {
  run_id: string;
  submission_id: string;
  stopped: boolean;
  ray_status: string | null;
  message: string;
}

/** POST tutorial (Python: TutorialResponse). */
export interface ITutorialResponse {
  folder: string;
  copied: string[];
  existing: string[];
  /** The notebook to open. */
  first: string;
}

/** GET status (Python: ServerStatus). */
export interface IServerStatus {
  version: string;
  store_root: string;
  store_exists: boolean;
  run_count: number;
  ledger_path: string;
  ledger_exists: boolean;
  /** jupyter-server-proxy is installed. */
  proxy: boolean;
  tutorial_notebooks: string[];
}

/** A registered Jupyter kernel (Python: KernelInfo). */
export interface IKernelInfo {
  name: string;
  display_name: string;
  /** Its interpreter, or null for a non-Python kernel. */
  python: string | null;
  /** That interpreter finds hyperpod_rl. */
  has_hyperpod_rl: boolean;
  detail: string;
}

/** GET kernels (Python: KernelsResponse). */
export interface IKernelsResponse {
  kernels: IKernelInfo[];
  /** The kernel hyperpod-rl code runs in; null when none can import it. */
  chosen: string | null;
  /** Why, or what to fix. */
  message: string;
}
