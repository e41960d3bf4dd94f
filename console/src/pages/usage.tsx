import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { type Schemas, unwrap } from '../../../src/client/index.js';
import { ListTable } from '../components/list-table.js';
import { DeploymentName } from '../components/names.js';
import { formatCost } from '../components/run-usage.js';
import { ErrorText, Field } from '../components/ui.js';
import { UsageChart } from '../components/usage-chart.js';
import { useSession } from '../session.js';

type Grouping = 'day' | 'deployment' | 'model';
type Row = Schemas['UsageRow'];

const numbers = new Intl.NumberFormat();
const GROUPINGS: { value: Grouping; label: string }[] = [
  { value: 'day', label: 'Day' },
  { value: 'deployment', label: 'Deployment' },
  { value: 'model', label: 'Model' },
];

/** The organization's tokens and cost over the last 30 days, per day, deployment or model (GET /v1/usage). */
export default function UsagePage() {
  const { client } = useSession();
  const [groupBy, setGroupBy] = useState<Grouping>('day');
  const usage = useQuery({
    queryKey: ['usage', groupBy],
    queryFn: () => unwrap(client.GET('/v1/usage', { params: { query: { group_by: groupBy } } })),
  });
  const rows = usage.data?.usage;
  const keys = useMemo(() => (rows ?? []).map((row) => row.key), [rows]);
  const costs = useMemo(() => (rows ?? []).map((row) => row.cost), [rows]);
  const tokens = useMemo(() => (rows ?? []).map((row) => row.total_tokens), [rows]);
  const total = (rows ?? []).reduce((sum, row) => sum + (row.cost ?? 0), 0);
  const keyCell = (row: Row) => (groupBy === 'deployment' ? <DeploymentName id={row.key} withId /> : row.key);
  return (
    <>
      <h1>Usage</h1>
      <p>Tokens and cost of the organization’s runs over the last 30 days; {formatCost(total)} in all.</p>
      <Field label="Per">
        {(id) => (
          <select id={id} value={groupBy} onChange={(event) => setGroupBy(event.target.value as Grouping)}>
            {GROUPINGS.map((grouping) => (
              <option key={grouping.value} value={grouping.value}>
                {grouping.label}
              </option>
            ))}
          </select>
        )}
      </Field>
      <ErrorText error={usage.error} />
      {rows && rows.length === 0 ? <p>No LLM calls reported in these days.</p> : null}
      {rows && rows.length > 0 ? (
        <>
          <h2>Cost (USD)</h2>
          <UsageChart label="Cost" keys={keys} values={costs} unit="USD" />
          <h2>Tokens</h2>
          <UsageChart label="Tokens" keys={keys} values={tokens} unit="tokens" />
          <ListTable
            label="Usage"
            rows={rows}
            rowKey={(row) => row.key}
            columns={[
              { header: GROUPINGS.find((grouping) => grouping.value === groupBy)?.label ?? 'Key', cell: keyCell },
              { header: 'Runs', cell: (row) => numbers.format(row.runs) },
              { header: 'Calls', cell: (row) => numbers.format(row.calls) },
              { header: 'Input', cell: (row) => numbers.format(row.input_tokens) },
              { header: 'Cached input', cell: (row) => numbers.format(row.cached_input_tokens) },
              { header: 'Output', cell: (row) => numbers.format(row.output_tokens) },
              { header: 'Cost', cell: (row) => formatCost(row.cost) },
            ]}
          />
        </>
      ) : null}
    </>
  );
}
