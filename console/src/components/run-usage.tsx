import type { Schemas } from '../../../src/client/index.js';
import { ListTable } from './list-table.js';

type RunUsage = Schemas['RunUsage'];
type ModelRow = Schemas['ModelUsage'] & { model: string };

const tokens = new Intl.NumberFormat();

/** USD with enough digits for a cheap call to show (a tenth of a cent is common). */
export function formatCost(cost: number | null | undefined): string {
  if (cost === null || cost === undefined) return 'no price';
  return cost >= 1 ? `$${cost.toFixed(2)}` : `$${cost.toPrecision(3)}`;
}

/** A run's tokens and cost (CONTRACTS §15): the totals, then one row per model. */
export function RunUsageTable({ usage }: { usage: RunUsage | null | undefined }) {
  if (!usage) return <p>No LLM calls reported.</p>;
  const rows: ModelRow[] = Object.entries(usage.by_model).map(([model, sums]) => ({ model, ...sums }));
  const partial = usage.unpriced_models.length > 0;
  return (
    <>
      <p>
        {tokens.format(usage.total_tokens)} tokens in {tokens.format(usage.calls)} calls;{' '}
        {usage.cost === null ? 'no model has a price' : `cost ${formatCost(usage.cost)}`}
        {partial && usage.cost !== null ? ` (without ${usage.unpriced_models.join(', ')}, which have no price)` : ''}
      </p>
      <ListTable
        label="Usage by model"
        rows={rows}
        rowKey={(row) => row.model}
        columns={[
          { header: 'Model', cell: (row) => row.model },
          { header: 'Calls', cell: (row) => tokens.format(row.calls) },
          { header: 'Input', cell: (row) => tokens.format(row.input_tokens) },
          { header: 'Cached input', cell: (row) => tokens.format(row.cached_input_tokens) },
          { header: 'Output', cell: (row) => tokens.format(row.output_tokens) },
          { header: 'Reasoning', cell: (row) => tokens.format(row.reasoning_tokens) },
          { header: 'Cost', cell: (row) => formatCost(row.cost) },
        ]}
      />
    </>
  );
}
