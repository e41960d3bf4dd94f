import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Counts of runs by status, read at scrape time (shared truth across instances). */
export type ActiveRunCounter = () => Promise<Array<{ status: string; count: number }>>;

/** The service's Prometheus metrics; one registry per app, so tests can build many apps in one process. */
export function createMetrics(countActiveRuns?: ActiveRunCounter) {
  const registry = new Registry();
  return {
    registry,
    activeRuns: new Gauge({
      name: 'crewd_runs',
      help: 'Runs now pending or running, across all instances',
      labelNames: ['status'] as const,
      registers: [registry],
      async collect() {
        if (!countActiveRuns) return;
        const counts = new Map([
          ['pending', 0],
          ['running', 0],
        ]);
        for (const row of await countActiveRuns()) counts.set(row.status, row.count);
        for (const [status, count] of counts) this.set({ status }, count);
      },
    }),
    httpRequestDuration: new Histogram({
      name: 'crewd_http_request_duration_seconds',
      help: 'HTTP request latency by method, route and status code',
      labelNames: ['method', 'route', 'status_code'] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    runsFinished: new Counter({
      name: 'crewd_runs_finished_total',
      help: 'Runs this instance ended, by final status',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    runsStarted: new Counter({
      name: 'crewd_runs_started_total',
      help: 'Runner processes this instance started',
      registers: [registry],
    }),
    eventsRelayed: new Counter({
      name: 'crewd_events_relayed_total',
      help: 'Run events sent to event-stream clients',
      registers: [registry],
    }),
    openStreams: new Gauge({
      name: 'crewd_open_streams',
      help: 'Event streams open on this instance',
      registers: [registry],
    }),
    deliveries: new Counter({
      name: 'crewd_webhook_deliveries_total',
      help: 'Outgoing webhook delivery attempts, by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
