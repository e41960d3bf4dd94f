import path from 'node:path';
import { z } from 'zod';
import { DEFAULT_RUN_LIMITS, type RunLimits } from './run-limits.js';

const booleanString = z
  .enum(['true', 'false', '1', '0'], { message: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1');

const retrySchedule = z.string().transform((value, ctx) => {
  const parts = value.split(',').map((part) => Number(part.trim()));
  if (parts.length === 0 || parts.some((n) => !Number.isFinite(n) || n < 0)) {
    ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of non-negative seconds' });
    return z.NEVER;
  }
  return parts;
});

/** The OTLP protocols crewd sends traces with; grpc is not one of them. */
const otlpProtocol = z
  .enum(['http/protobuf', 'http/json'], { message: 'must be http/protobuf or http/json (grpc is not supported)' })
  .optional();

const positiveNumber = z.coerce.number({ message: 'must be a number' }).positive('must be positive');
const count = (min: number) => z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(min);

/** Colon-separated absolute folders (RUNNER_EXTRA_PATHS). */
const extraPaths = z.string().transform((value, ctx) => {
  const folders = value.split(':').filter((folder) => folder !== '');
  const relative = folders.find((folder) => !path.isAbsolute(folder));
  if (relative !== undefined) {
    ctx.addIssue({ code: 'custom', message: `must be absolute folders separated by colons, not ${relative}` });
    return z.NEVER;
  }
  return folders.map((folder) => path.resolve(folder));
});

const configSchema = z.object({
  PORT: z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql://')
    .optional(),
  DATA_DIR: z.string().min(1).default('./data'),
  BOOTSTRAP_API_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
  PUBLIC_URL: z.url({ message: 'must be an absolute URL' }).optional(),
  WEBHOOK_ALLOW_PRIVATE_URLS: booleanString.default(false),
  MAX_CONCURRENT_RUNS: z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(1).default(16),
  MAX_RUNS_PER_ORGANIZATION: count(0).default(0),
  CRON_MIN_INTERVAL_SECONDS: count(1).default(60),
  MAX_CRONS_PER_ORGANIZATION: count(1).default(100),
  EVENT_STREAM_TIMEOUT_SECONDS: positiveNumber.default(1800),
  WEBHOOK_TIMEOUT_SECONDS: positiveNumber.default(30),
  WEBHOOK_RETRY_SCHEDULE: retrySchedule.default([5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400]),
  INSTANCE_LEASE_SECONDS: positiveNumber.default(30),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['pretty', 'json'], { message: 'must be pretty or json' }).optional(),
  METRICS_PORT: z.coerce
    .number({ message: 'must be a number' })
    .int('must be an integer')
    .min(1, 'must be a port number')
    .max(65535, 'must be a port number')
    .optional(),
  RUNNER_SANDBOX: z.enum(['auto', 'on', 'off'], { message: 'must be auto, on or off' }).default('auto'),
  // Unset is told apart from isolated: only the default falls back to the host's network (sandbox/index.ts).
  RUNNER_NETWORK: z.enum(['isolated', 'on', 'off'], { message: 'must be isolated, on or off' }).optional(),
  RUNNER_SPAWNER: z.enum(['helper', 'direct'], { message: 'must be helper or direct' }).default('helper'),
  RUNNER_EXTRA_PATHS: extraPaths.default([]),
  RUN_MEMORY_MB: count(64).default(DEFAULT_RUN_LIMITS.memoryMb),
  RUN_CPU_SECONDS: count(1).default(DEFAULT_RUN_LIMITS.cpuSeconds),
  RUN_MAX_PROCESSES: count(16).default(DEFAULT_RUN_LIMITS.processes),
  RUN_TMP_MB: count(1).default(DEFAULT_RUN_LIMITS.tmpMb),
  RUN_HOME_MB: count(1).default(DEFAULT_RUN_LIMITS.homeMb),
  RUN_MAX_EVENTS: count(1).default(DEFAULT_RUN_LIMITS.events),
  RUN_MAX_OUTPUT_MB: count(1).default(DEFAULT_RUN_LIMITS.outputMb),
  DATABASE_PREPARED_STATEMENTS: z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
  TABLE_INDEX_MIN_ROWS: z.coerce
    .number({ message: 'must be a number' })
    .int('must be an integer')
    .min(0, 'must be 0 or more')
    .default(10_000),
  RATE_LIMIT_PER_MINUTE: count(0).default(0),
  FAILED_AUTH_LIMIT_PER_MINUTE: count(0).default(60),
  INCOMING_WEBHOOK_LIMIT_PER_MINUTE: count(0).default(60),
  MAX_EVENT_STREAMS: count(1).default(4000),
  MAX_EVENT_STREAMS_PER_KEY: count(1).default(1000),
  MAX_EVENT_STREAMS_PER_ORGANIZATION: count(0).default(0),
  MAX_BULK_UPDATE_BYTES: count(1).default(16 * 1024 * 1024),
  MAX_BULK_DELETE_ROWS: count(1).default(100_000),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  TRUST_PROXY: booleanString.default(false),
  MAX_BUNDLE_MB: positiveNumber.default(50),
  MAX_CONCURRENT_BUILDS: z.coerce.number({ message: 'must be a number' }).int('must be an integer').min(1).default(2),
  BUILD_TIMEOUT_SECONDS: positiveNumber.default(900),
  BUILD_CACHE_DIR: z.string().min(1).optional(),
  BUILD_PYTHON_INSTALLER: z.enum(['uv', 'pip'], { message: 'must be uv or pip' }).default('uv'),
  PYTHON_FORK_SERVER_IDLE_SECONDS: z.coerce
    .number({ message: 'must be a number' })
    .min(0, 'must be 0 or more')
    .default(600),
  RUN_ISOLATION: z.enum(['run', 'deployment'], { message: 'must be run or deployment' }).default('run'),
  RUN_WORKER_CONCURRENCY: z.coerce
    .number({ message: 'must be a number' })
    .int('must be an integer')
    .min(1, 'must be 1 or more')
    .default(8),
  SECRETS_KEY: z.string().min(32, 'must be at least 32 characters').optional(),
  MCP_ALLOWED_ORIGINS: z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((origin) => origin.trim())
        .filter((origin) => origin !== ''),
    )
    .default([]),
  MCP_CALL_WAIT_SECONDS: positiveNumber.default(50),
  LANGGRAPH_API_PREFIX: z
    .string()
    .regex(/^\/[A-Za-z0-9._~/-]*[A-Za-z0-9._~-]$/, 'must be a path such as /langgraph (empty turns the API off)')
    .refine((value) => !/^\/(v1|console|webhooks)(\/|$)/.test(value), 'must not take a path crewd already serves')
    .default('/langgraph'),
  MODEL_PRICES_FILE: z.string().min(1).optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional(),
  OTEL_EXPORTER_OTLP_HEADERS: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_HEADERS: z.string().optional(),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol,
  OTEL_SERVICE_NAME: z.string().min(1).default('crewd'),
  // The one variable of the service's own environment that runners get (CONTRACTS §6).
  PATH: z.string().optional(),
});

type ParsedEnv = z.output<typeof configSchema>;

/** The names of every setting crewd reads (for the start's warning about unknown ones that look like them). */
export const SETTING_NAMES: readonly string[] = Object.keys(configSchema.shape);

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  bootstrapApiKey: string | undefined;
  publicUrl: string;
  webhookAllowPrivateUrls: boolean;
  maxConcurrentRuns: number;
  /** Run slots of this instance one organization may hold; 0: a share computed from MAX_CONCURRENT_RUNS (run-queue.ts). */
  maxRunsPerOrganization: number;
  /** The shortest time between two due times of a cron. */
  cronMinIntervalSeconds: number;
  /** The most crons one organization may have. */
  maxCronsPerOrganization: number;
  eventStreamTimeoutSeconds: number;
  webhookTimeoutSeconds: number;
  webhookRetrySchedule: number[];
  instanceLeaseSeconds: number;
  logLevel: ParsedEnv['LOG_LEVEL'];
  /** Log lines for people (pretty) or for log storage (json); unset: pretty when standard output is a terminal. */
  logFormat?: 'pretty' | 'json' | undefined;
  /** Requests one API key may make per minute on one instance; 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** Set: GET /metrics is served on this port (same HOST) and not on PORT. */
  metricsPort: number | undefined;
  /** Runners in a bubblewrap sandbox: when available (auto), always (on) or never (off); CONTRACTS §12. */
  runnerSandbox: ParsedEnv['RUNNER_SANDBOX'];
  /**
   * Runners and build steps get a network of their own that reaches the internet but not the host
   * (isolated), the host's (on) or loopback only (off); unset: isolated where it works (CONTRACTS §12).
   */
  runnerNetwork: ParsedEnv['RUNNER_NETWORK'];
  /** `helper`: runners forked by a small helper process; `direct`: by the service itself (for measuring). */
  runnerSpawner: ParsedEnv['RUNNER_SPAWNER'];
  /** Folders the sandbox shows runners read-only besides the machine's programs (command versions' programs). */
  runnerExtraPaths: string[];
  /** What one run may use (RUN_MEMORY_MB, RUN_CPU_SECONDS, …); CONTRACTS §12 "Limits". */
  runLimits: RunLimits;
  /** On PostgreSQL, statements sent again and again are prepared once per connection (off: behind PgBouncer < 1.21). */
  databasePreparedStatements: boolean;
  /** Requests with a missing or unknown key one client address may make per minute; 0: no limit. */
  failedAuthLimitPerMinute: number;
  /** Requests to incoming-webhook token URLs one client address may make per minute; 0: no limit. */
  incomingWebhookLimitPerMinute: number;
  /** Event streams open at once on one instance, in all and per API key. */
  maxEventStreams: number;
  maxEventStreamsPerKey: number;
  /** Streams one organization may hold open on one instance; 0: a share computed from maxEventStreams. */
  maxEventStreamsPerOrganization: number;
  /** Largest matched rows × update value bytes one bulk row update may write. */
  maxBulkUpdateBytes: number;
  /** The most rows one bulk row delete may remove. */
  maxBulkDeleteRows: number;
  /** Bearer token `/metrics` asks for; unset: `/metrics` answers loopback clients only. */
  metricsToken: string | undefined;
  /** Take the client address from X-Forwarded-For (only behind a proxy that sets it). */
  trustProxy: boolean;
  /** PATH handed to runner processes; unset: a default system PATH (src/execution/run-setup.ts). */
  /** Tables with fewer rows get no indexes built for their repeated filters. */
  tableIndexMinRows: number;

  runnerPath: string | undefined;
  /** Largest bundle upload, in bytes (MAX_BUNDLE_MB). */
  maxBundleBytes: number;
  maxConcurrentBuilds: number;
  buildTimeoutSeconds: number;
  /** Built environments and package-tool caches, per organization; default DATA_DIR/environments. */
  buildCacheDir: string;
  /** uv (from PATH, else installed once into the build cache's build-tools) or the machine's pip. */
  buildPythonInstaller: 'uv' | 'pip';
  /** A Python version's fork server exits after this long without a run; 0: no fork servers. */
  pythonForkServerIdleSeconds: number;
  /** `run`: a Python version's runs each fork a child; `deployment`: they share warm workers (docs/operations.md). */
  runIsolation: 'run' | 'deployment';
  /** Under RUN_ISOLATION=deployment, the runs one worker runs at a time. */
  runWorkerConcurrency: number;
  /** Encrypts deployment variables at rest (AES-256-GCM) when set. */
  secretsKey: string | undefined;
  /** Origins whose browser pages may call /mcp; `*` any. Requests without an Origin header always pass. */
  mcpAllowedOrigins: string[];
  /** How long a tools/call waits for its run before answering with the run's id (the run goes on). */
  mcpCallWaitSeconds: number;
  /** Where the LangGraph Agent Server API is served (CONTRACTS §14); undefined: not served (set empty). */
  langgraphApiPrefix: string | undefined;
  /** What build steps get of the service's environment: HOME, proxies, pip, uv and npm settings. */
  buildEnv: Record<string, string>;
  /** Model prices over the built-in ones (src/telemetry/prices.ts); read at the start. */
  modelPricesFile: string | undefined;
  /** Set: one OpenTelemetry trace per run goes to this OTLP/HTTP traces URL (CONTRACTS §15). */
  tracing: TracingSettings | undefined;
}

/** Where and how runs' traces are sent; `protocol` is the OTLP one (http/protobuf, the spec's default, or http/json). */
export interface TracingSettings {
  url: string;
  headers: Record<string, string>;
  serviceName: string;
  protocol: 'http/protobuf' | 'http/json';
}

export class ConfigError extends Error {}

/** Variables of the service's environment build steps keep: the machine's package-tool settings, never its secrets. */
const BUILD_TOOL_SETTINGS =
  /^(HOME|LANG|LC_ALL|TMPDIR|SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|XDG_CONFIG_HOME|XDG_CACHE_HOME|PIP_.*|UV_.*|npm_config_.*|NPM_CONFIG_.*|(HTTP|HTTPS|NO|ALL)_PROXY|(http|https|no|all)_proxy)$/;

/** Parses the environment once; throws ConfigError with one line naming the bad variable. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  // An empty variable means "not set", as in most shells' `VAR= cmd`.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ''));
  const result = configSchema.safeParse(present);
  if (!result.success) {
    const issue = result.error.issues[0];
    const name = issue?.path.join('.') ?? 'environment';
    throw new ConfigError(`Invalid configuration: ${name} ${issue?.message ?? 'is invalid'}`);
  }
  const parsed = result.data;
  return {
    port: parsed.PORT,
    host: parsed.HOST,
    databaseUrl: parsed.DATABASE_URL,
    dataDir: parsed.DATA_DIR,
    bootstrapApiKey: parsed.BOOTSTRAP_API_KEY,
    publicUrl: (parsed.PUBLIC_URL ?? `http://localhost:${parsed.PORT}`).replace(/\/+$/, ''),
    webhookAllowPrivateUrls: parsed.WEBHOOK_ALLOW_PRIVATE_URLS,
    maxConcurrentRuns: parsed.MAX_CONCURRENT_RUNS,
    maxRunsPerOrganization: parsed.MAX_RUNS_PER_ORGANIZATION,
    cronMinIntervalSeconds: parsed.CRON_MIN_INTERVAL_SECONDS,
    maxCronsPerOrganization: parsed.MAX_CRONS_PER_ORGANIZATION,
    eventStreamTimeoutSeconds: parsed.EVENT_STREAM_TIMEOUT_SECONDS,
    webhookTimeoutSeconds: parsed.WEBHOOK_TIMEOUT_SECONDS,
    webhookRetrySchedule: parsed.WEBHOOK_RETRY_SCHEDULE,
    instanceLeaseSeconds: parsed.INSTANCE_LEASE_SECONDS,
    logLevel: parsed.LOG_LEVEL,
    logFormat: parsed.LOG_FORMAT,
    rateLimitPerMinute: parsed.RATE_LIMIT_PER_MINUTE,
    metricsPort: parsed.METRICS_PORT,
    runnerSandbox: parsed.RUNNER_SANDBOX,
    runnerNetwork: parsed.RUNNER_NETWORK,
    runnerSpawner: parsed.RUNNER_SPAWNER,
    runnerExtraPaths: parsed.RUNNER_EXTRA_PATHS,
    runLimits: {
      memoryMb: parsed.RUN_MEMORY_MB,
      cpuSeconds: parsed.RUN_CPU_SECONDS,
      processes: parsed.RUN_MAX_PROCESSES,
      tmpMb: parsed.RUN_TMP_MB,
      homeMb: parsed.RUN_HOME_MB,
      events: parsed.RUN_MAX_EVENTS,
      outputMb: parsed.RUN_MAX_OUTPUT_MB,
    },
    databasePreparedStatements: parsed.DATABASE_PREPARED_STATEMENTS === 'on',
    tableIndexMinRows: parsed.TABLE_INDEX_MIN_ROWS,
    failedAuthLimitPerMinute: parsed.FAILED_AUTH_LIMIT_PER_MINUTE,
    incomingWebhookLimitPerMinute: parsed.INCOMING_WEBHOOK_LIMIT_PER_MINUTE,
    maxEventStreams: parsed.MAX_EVENT_STREAMS,
    maxEventStreamsPerKey: parsed.MAX_EVENT_STREAMS_PER_KEY,
    maxEventStreamsPerOrganization: parsed.MAX_EVENT_STREAMS_PER_ORGANIZATION,
    maxBulkUpdateBytes: parsed.MAX_BULK_UPDATE_BYTES,
    maxBulkDeleteRows: parsed.MAX_BULK_DELETE_ROWS,
    metricsToken: parsed.METRICS_TOKEN,
    trustProxy: parsed.TRUST_PROXY,
    runnerPath: parsed.PATH,
    maxBundleBytes: Math.round(parsed.MAX_BUNDLE_MB * 1024 * 1024),
    maxConcurrentBuilds: parsed.MAX_CONCURRENT_BUILDS,
    buildTimeoutSeconds: parsed.BUILD_TIMEOUT_SECONDS,
    buildCacheDir: parsed.BUILD_CACHE_DIR ?? path.join(parsed.DATA_DIR, 'environments'),
    buildPythonInstaller: parsed.BUILD_PYTHON_INSTALLER,
    pythonForkServerIdleSeconds: parsed.PYTHON_FORK_SERVER_IDLE_SECONDS,
    runIsolation: parsed.RUN_ISOLATION,
    runWorkerConcurrency: parsed.RUN_WORKER_CONCURRENCY,
    secretsKey: parsed.SECRETS_KEY,
    mcpAllowedOrigins: parsed.MCP_ALLOWED_ORIGINS,
    mcpCallWaitSeconds: parsed.MCP_CALL_WAIT_SECONDS,
    // Empty turns the API off, unlike other settings where empty means unset.
    langgraphApiPrefix: env.LANGGRAPH_API_PREFIX === '' ? undefined : parsed.LANGGRAPH_API_PREFIX,
    buildEnv: Object.fromEntries(
      Object.entries(present).filter((entry): entry is [string, string] => BUILD_TOOL_SETTINGS.test(entry[0])),
    ),
    modelPricesFile: parsed.MODEL_PRICES_FILE,
    tracing: tracingConfig(parsed),
  };
}

/** OTEL_EXPORTER_OTLP_HEADERS' `key=value,key2=value2`, values percent-decoded as the OpenTelemetry spec says. */
function otlpHeaders(value: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (value ?? '').split(',')) {
    const equals = pair.indexOf('=');
    if (equals <= 0) continue;
    headers[decodeURIComponent(pair.slice(0, equals).trim())] = decodeURIComponent(pair.slice(equals + 1).trim());
  }
  return headers;
}

/**
 * The traces URL: the traces endpoint as given, else the general endpoint with /v1/traces (the OTLP rule);
 * the protocol: the traces one, else the general one, else http/protobuf (the spec's default).
 */
function tracingConfig(parsed: ParsedEnv): Config['tracing'] {
  const general = parsed.OTEL_EXPORTER_OTLP_ENDPOINT;
  const url = parsed.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (general && `${general.replace(/\/+$/, '')}/v1/traces`);
  if (!url) return undefined;
  const headers = {
    ...otlpHeaders(parsed.OTEL_EXPORTER_OTLP_HEADERS),
    ...otlpHeaders(parsed.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
  };
  const protocol = parsed.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? parsed.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
  return { url, headers, serviceName: parsed.OTEL_SERVICE_NAME, protocol };
}
