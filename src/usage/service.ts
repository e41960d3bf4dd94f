import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { Database } from '../db/types.js';
import { badRequest } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { roundUsd } from '../telemetry/usage.js';

export type UsageGrouping = 'day' | 'deployment' | 'model';

export interface UsageRow {
  key: string;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  reasoning_tokens: number;
  total_tokens: number;
  calls: number;
  runs: number;
  cost: number | null;
}

interface SummedRow {
  key: string;
  input_tokens: string | number | null;
  output_tokens: string | number | null;
  cached_input_tokens: string | number | null;
  reasoning_tokens: string | number | null;
  total_tokens: string | number | null;
  calls: string | number | null;
  runs: string | number;
  cost: string | number | null;
}

const DEFAULT_DAYS = 30;
const COUNTS = ['input_tokens', 'output_tokens', 'cached_input_tokens', 'reasoning_tokens', 'total_tokens', 'calls'];

/** Sums of the counts in `usage` (a run's, or one model's of it), as SQL select items. */
function sums(usage: RawBuilder<unknown>) {
  return sql.join(
    [
      ...COUNTS.map((name) => sql`sum((${usage}->>${name})::bigint) as ${sql.ref(name)}`),
      sql`sum((${usage}->>'cost')::numeric) as cost`,
    ],
    sql`, `,
  );
}

/**
 * What an organization's runs used, summed by day (UTC, of the run's creation), deployment or
 * model, over the runs created in [from, to). Runs without LLM calls are not counted.
 */
export function createUsageService(db: Kysely<Database>) {
  return {
    async summary(
      orgId: string,
      query: {
        deployment_id?: string | undefined;
        from?: string | undefined;
        to?: string | undefined;
        group_by: UsageGrouping;
      },
    ): Promise<{ usage: UsageRow[]; from: string; to: string }> {
      const to = query.to ? new Date(query.to) : new Date();
      const from = query.from ? new Date(query.from) : new Date(to.getTime() - DEFAULT_DAYS * 86_400_000);
      if (from.getTime() > to.getTime()) throw badRequest('from must not be after to');
      const deployment = query.deployment_id ? sql`and r.deployment_id = ${query.deployment_id}` : sql``;
      const where = sql`r.org_id = ${orgId} and r.usage is not null
        and r.created_at >= ${from} and r.created_at < ${to} ${deployment}`;
      let statement: RawBuilder<SummedRow>;
      if (query.group_by === 'model') {
        statement = sql<SummedRow>`select m.key as key, ${sums(sql`m.value`)}, count(distinct r.id) as runs
          from runs r cross join lateral jsonb_each(r.usage->'by_model') as m(key, value)
          where ${where} group by m.key order by m.key`;
      } else {
        const key =
          query.group_by === 'day' ? sql`to_char(r.created_at at time zone 'UTC', 'YYYY-MM-DD')` : sql`r.deployment_id`;
        statement = sql<SummedRow>`select ${key} as key, ${sums(sql`r.usage`)}, count(*) as runs
          from runs r where ${where} group by 1 order by 1`;
      }
      const { rows } = await statement.execute(db);
      return { usage: rows.map(toUsageRow), from: toIso(from), to: toIso(to) };
    },
  };
}

function toUsageRow(row: SummedRow): UsageRow {
  const count = (value: string | number | null) => Number(value ?? 0);
  return {
    key: row.key,
    input_tokens: count(row.input_tokens),
    output_tokens: count(row.output_tokens),
    cached_input_tokens: count(row.cached_input_tokens),
    reasoning_tokens: count(row.reasoning_tokens),
    total_tokens: count(row.total_tokens),
    calls: count(row.calls),
    runs: count(row.runs),
    cost: row.cost === null ? null : roundUsd(Number(row.cost)),
  };
}

export type UsageService = ReturnType<typeof createUsageService>;
