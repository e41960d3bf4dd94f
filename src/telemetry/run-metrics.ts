import { Counter, Histogram, type Registry } from 'prom-client';
import type { EndedRunFacts } from '../run-record/observer.js';

const TOKEN_KINDS = [
  ['input', 'input_tokens'],
  ['output', 'output_tokens'],
  ['cached_input', 'cached_input_tokens'],
  ['reasoning', 'reasoning_tokens'],
] as const;

/**
 * Per-deployment run metrics (CONTRACTS §15), counted by the instance that ends each run. Labels
 * are deployment ids, statuses, models and token kinds, never run ids, so their number stays bounded.
 */
export function createRunMetrics(registry: Registry) {
  const runs = new Counter({
    name: 'crewd_deployment_runs_total',
    help: 'Runs ended, by deployment and final status',
    labelNames: ['deployment', 'status'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'crewd_deployment_run_duration_seconds',
    help: 'Time from a run’s start to its end, by deployment',
    labelNames: ['deployment'] as const,
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600],
    registers: [registry],
  });
  const queueWait = new Histogram({
    name: 'crewd_deployment_queue_wait_seconds',
    help: 'Time from a run’s creation to its start, by deployment',
    labelNames: ['deployment'] as const,
    buckets: [0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const tokens = new Counter({
    name: 'crewd_deployment_tokens_total',
    help: 'LLM tokens of ended runs, by deployment, model and kind (input counts cached input; output counts reasoning)',
    labelNames: ['deployment', 'model', 'kind'] as const,
    registers: [registry],
  });
  const cost = new Counter({
    name: 'crewd_deployment_cost_usd_total',
    help: 'Cost in USD of ended runs’ priced LLM calls, by deployment and model',
    labelNames: ['deployment', 'model'] as const,
    registers: [registry],
  });

  return {
    runEnded(run: EndedRunFacts): void {
      const deployment = run.deployment_id;
      runs.inc({ deployment, status: run.status });
      if (run.started_at) {
        queueWait.observe({ deployment }, Math.max(0, run.started_at.getTime() - run.created_at.getTime()) / 1000);
        const end = run.completed_at ?? new Date();
        duration.observe({ deployment }, Math.max(0, end.getTime() - run.started_at.getTime()) / 1000);
      }
      for (const [model, sums] of Object.entries(run.usage?.by_model ?? {})) {
        for (const [kind, key] of TOKEN_KINDS) if (sums[key] > 0) tokens.inc({ deployment, model, kind }, sums[key]);
        if (sums.cost) cost.inc({ deployment, model }, sums.cost);
      }
    },
  };
}
