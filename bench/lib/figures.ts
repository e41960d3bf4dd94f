export type GoalOp = '<=' | '>=' | '=';

export interface Goal {
  op: GoalOp;
  target: number;
}

/** Prints `figure: <name> = <value> <unit> (goal <op> <target>: met|missed)`, or without a goal. */
export function printFigure(name: string, value: number, unit: string, goal?: Goal): void {
  const shown = Number.isInteger(value) ? String(value) : value.toFixed(3);
  if (!goal) {
    process.stdout.write(`figure: ${name} = ${shown} ${unit} (no goal)\n`);
    return;
  }
  const met = goal.op === '<=' ? value <= goal.target : goal.op === '>=' ? value >= goal.target : value === goal.target;
  process.stdout.write(
    `figure: ${name} = ${shown} ${unit} (goal ${goal.op} ${goal.target}: ${met ? 'met' : 'missed'})\n`,
  );
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}
