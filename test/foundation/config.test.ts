import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('configuration', () => {
  it('has the defaults of CONTRACTS §1', () => {
    const config = loadConfig({});
    expect(config).toEqual({
      port: 8080,
      host: '0.0.0.0',
      databaseUrl: undefined,
      dataDir: './data',
      bootstrapApiKey: undefined,
      publicUrl: 'http://localhost:8080',
      webhookAllowPrivateUrls: false,
      maxConcurrentRuns: 16,
      maxRunsPerOrganization: 0,
      cronMinIntervalSeconds: 60,
      maxCronsPerOrganization: 100,
      eventStreamTimeoutSeconds: 1800,
      webhookTimeoutSeconds: 30,
      webhookRetrySchedule: [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400],
      instanceLeaseSeconds: 30,
      logLevel: 'info',
      rateLimitPerMinute: 0,
      metricsPort: undefined,
      runnerSandbox: 'auto',
      // Unset: isolated, or the host's network where auto cannot isolate (sandbox/index.ts).
      runnerNetwork: undefined,
      runnerSpawner: 'helper',
      databasePreparedStatements: true,
      tableIndexMinRows: 10_000,
      failedAuthLimitPerMinute: 60,
      incomingWebhookLimitPerMinute: 60,
      maxEventStreams: 4000,
      maxEventStreamsPerKey: 1000,
      maxEventStreamsPerOrganization: 0,
      maxBulkUpdateBytes: 16 * 1024 * 1024,
      maxBulkDeleteRows: 100_000,
      metricsToken: undefined,
      trustProxy: false,
      maxBundleBytes: 50 * 1024 * 1024,
      maxConcurrentBuilds: 2,
      buildTimeoutSeconds: 900,
      buildCacheDir: 'data/environments',
      pythonForkServerIdleSeconds: 600,
      runIsolation: 'run',
      runWorkerConcurrency: 8,
      secretsKey: undefined,
      mcpAllowedOrigins: [],
      mcpCallWaitSeconds: 50,
      langgraphApiPrefix: '/langgraph',
      buildEnv: {},
      modelPricesFile: undefined,
      tracing: undefined,
      runLimits: {
        cpuSeconds: 3600,
        events: 10_000,
        homeMb: 1024,
        memoryMb: 4096,
        outputMb: 64,
        processes: 512,
        tmpMb: 1024,
      },
      runnerExtraPaths: [],
      runnerPath: undefined,
      buildPythonInstaller: 'uv',
    });
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgres://u@db:5432/crewd',
      DATA_DIR: '/var/lib/crewd',
      BOOTSTRAP_API_KEY: 'a-very-long-secret-key',
      PUBLIC_URL: 'https://crewd.example.com/',
      WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
      MAX_CONCURRENT_RUNS: '4',
      EVENT_STREAM_TIMEOUT_SECONDS: '60',
      WEBHOOK_TIMEOUT_SECONDS: '5',
      WEBHOOK_RETRY_SCHEDULE: '1, 2,3',
      INSTANCE_LEASE_SECONDS: '10',
      LOG_LEVEL: 'debug',
      METRICS_PORT: '9464',
      RUNNER_SANDBOX: 'on',
      RUNNER_NETWORK: 'off',
      TABLE_INDEX_MIN_ROWS: '0',
      FAILED_AUTH_LIMIT_PER_MINUTE: '10',
      INCOMING_WEBHOOK_LIMIT_PER_MINUTE: '0',
      MAX_EVENT_STREAMS: '50',
      MAX_EVENT_STREAMS_PER_KEY: '5',
      MAX_EVENT_STREAMS_PER_ORGANIZATION: '20',
      MAX_BULK_UPDATE_BYTES: '1048576',
      METRICS_TOKEN: 'a-metrics-scrape-token',
      TRUST_PROXY: 'true',
      DATABASE_PREPARED_STATEMENTS: 'off',
      RUN_ISOLATION: 'deployment',
      RUN_WORKER_CONCURRENCY: '3',
    });
    expect(config.port).toBe(9000);
    expect(config.host).toBe('127.0.0.1');
    expect(config.databaseUrl).toBe('postgres://u@db:5432/crewd');
    expect(config.dataDir).toBe('/var/lib/crewd');
    expect(config.databasePreparedStatements).toBe(false);
    expect(config.runIsolation).toBe('deployment');
    expect(config.runWorkerConcurrency).toBe(3);
    expect(() => loadConfig({ RUN_ISOLATION: 'process' })).toThrow('RUN_ISOLATION must be run or deployment');
    expect(() => loadConfig({ RUN_WORKER_CONCURRENCY: '0' })).toThrow('RUN_WORKER_CONCURRENCY must be 1 or more');
    expect(config.bootstrapApiKey).toBe('a-very-long-secret-key');
    expect(config.publicUrl).toBe('https://crewd.example.com');
    expect(config.webhookAllowPrivateUrls).toBe(true);
    expect(config.maxConcurrentRuns).toBe(4);
    expect(config.eventStreamTimeoutSeconds).toBe(60);
    expect(config.webhookTimeoutSeconds).toBe(5);
    expect(config.webhookRetrySchedule).toEqual([1, 2, 3]);
    expect(config.instanceLeaseSeconds).toBe(10);
    expect(config.logLevel).toBe('debug');
    expect(config.rateLimitPerMinute).toBe(0);
    expect(config.metricsPort).toBe(9464);
    expect(config.runnerSandbox).toBe('on');
    expect(config.runnerNetwork).toBe('off');
    expect(config.tableIndexMinRows).toBe(0);
    expect(() => loadConfig({ TABLE_INDEX_MIN_ROWS: '-1' })).toThrow('TABLE_INDEX_MIN_ROWS must be 0 or more');
    expect(config.failedAuthLimitPerMinute).toBe(10);
    expect(config.incomingWebhookLimitPerMinute).toBe(0);
    expect(config.maxEventStreams).toBe(50);
    expect(config.maxEventStreamsPerKey).toBe(5);
    expect(config.maxEventStreamsPerOrganization).toBe(20);
    expect(config.maxBulkUpdateBytes).toBe(1048576);
    expect(config.metricsToken).toBe('a-metrics-scrape-token');
    expect(config.trustProxy).toBe(true);
  });

  it('sends traces to the OTLP traces endpoint, else to the general one with /v1/traces, with their headers', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing).toEqual({
      url: 'http://collector:4318/v1/traces',
      headers: {},
      serviceName: 'crewd',
      protocol: 'http/protobuf',
    });
    const both = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.example.com/in',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20abc,x-team=a',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-team=b',
      OTEL_SERVICE_NAME: 'crewd-eu',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    expect(both.tracing).toEqual({
      url: 'https://traces.example.com/in',
      headers: { authorization: 'Bearer abc', 'x-team': 'b' },
      serviceName: 'crewd-eu',
      protocol: 'http/json',
    });
    expect(loadConfig({ MODEL_PRICES_FILE: '/etc/crewd/prices.json' }).modelPricesFile).toBe('/etc/crewd/prices.json');
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL',
    );
  });

  it('sends traces as http/protobuf unless OTEL_EXPORTER_OTLP(_TRACES)_PROTOCOL says http/json, and refuses grpc', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    const protocol = (env: Record<string, string>) => loadConfig({ ...endpoint, ...env }).tracing?.protocol;
    expect(
      protocol({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }),
    ).toBe('http/json');
    expect(protocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBe('http/json');
    expect(protocol({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' })).toBe('http/protobuf');
    expect(() => loadConfig({ ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      new ConfigError(
        'Invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (grpc is not supported)',
      ),
    );
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http' })).toThrow(
      'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http/protobuf or http/json',
    );
  });

  it('serves the LangGraph API under LANGGRAPH_API_PREFIX, and not at all when it is empty', () => {
    expect(loadConfig({ LANGGRAPH_API_PREFIX: '/agents/lg' }).langgraphApiPrefix).toBe('/agents/lg');
    expect(loadConfig({ LANGGRAPH_API_PREFIX: '' }).langgraphApiPrefix).toBeUndefined();
    expect(() => loadConfig({ LANGGRAPH_API_PREFIX: 'langgraph' })).toThrow('LANGGRAPH_API_PREFIX must be a path');
    expect(() => loadConfig({ LANGGRAPH_API_PREFIX: '/v1' })).toThrow('LANGGRAPH_API_PREFIX must not take a path');
  });

  it('derives PUBLIC_URL from PORT', () => {
    expect(loadConfig({ PORT: '3000' }).publicUrl).toBe('http://localhost:3000');
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['BOOTSTRAP_API_KEY', 'short'],
    ['PUBLIC_URL', 'not a url'],
    ['WEBHOOK_ALLOW_PRIVATE_URLS', 'yes please'],
    ['MAX_CONCURRENT_RUNS', '0'],
    ['EVENT_STREAM_TIMEOUT_SECONDS', '-1'],
    ['WEBHOOK_TIMEOUT_SECONDS', 'soon'],
    ['WEBHOOK_RETRY_SCHEDULE', '5,x,10'],
    ['INSTANCE_LEASE_SECONDS', '0'],
    ['LOG_LEVEL', 'loud'],
    ['METRICS_PORT', '0'],
    ['RUNNER_SANDBOX', 'maybe'],
    ['RUNNER_NETWORK', 'true'],
    ['FAILED_AUTH_LIMIT_PER_MINUTE', '-1'],
    ['INCOMING_WEBHOOK_LIMIT_PER_MINUTE', 'many'],
    ['MAX_EVENT_STREAMS', '0'],
    ['MAX_EVENT_STREAMS_PER_KEY', '1.5'],
    ['MAX_BULK_UPDATE_BYTES', '0'],
    ['METRICS_TOKEN', 'short'],
    ['TRUST_PROXY', 'maybe'],
    ['DATABASE_PREPARED_STATEMENTS', 'yes'],
  ])('refuses a bad %s with one line naming it', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(name);
    expect(message).not.toContain('\n');
  });
});
