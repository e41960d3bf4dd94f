import type { Transaction } from 'kysely';
import type { StoredColumn } from '../db/schema/tables.js';
import type { Database } from '../db/types.js';
import { badRequest } from '../errors.js';
import { newId } from '../ids.js';
import {
  type ColumnInput,
  checkColumnInputs,
  columnsByName,
  INDEXED_TYPES,
  newStoredColumn,
  SQL_TYPES,
} from './columns.js';
import { addPhysicalColumn, dropPhysicalColumn, syncColumnIndex } from './physical.js';
import type { TableRecord } from './repository.js';
import * as rows from './row-repository.js';
import { convertValue, type SqlValue } from './values.js';

type Plan =
  | { kind: 'add'; column: StoredColumn }
  | { kind: 'keep'; column: StoredColumn; reindex: boolean }
  | { kind: 'convert'; from: StoredColumn; column: StoredColumn; keys: string[]; values: SqlValue[] };

const rowsText = (n: number) => `${n} row${n === 1 ? '' : 's'}`;

/**
 * Replaces a table's column definitions, matched by name (CONTRACTS §5): columns left out are
 * dropped, new ones start empty, a changed type converts the stored values. Every check runs
 * before any change, and the caller's transaction makes the whole PATCH all or nothing.
 */
export async function replaceColumns(
  trx: Transaction<Database>,
  table: TableRecord,
  inputs: ColumnInput[],
): Promise<StoredColumn[]> {
  checkColumnInputs(inputs);
  const before = columnsByName(table.columns);
  const plans: Plan[] = [];

  for (const [index, input] of inputs.entries()) {
    const at = `columns.${index}`;
    const old = before.get(input.name);
    const target: StoredColumn = {
      id: old?.id ?? '',
      name: input.name,
      type: input.type,
      required: input.required ?? false,
    };
    if (input.type === 'select') target.options = [...(input.options ?? [])];

    if (!old) {
      if (target.required && table.row_count > 0) {
        throw badRequest(
          `${at}: column "${input.name}" cannot be added as required: ${rowsText(table.row_count)} have no value for it`,
        );
      }
      plans.push({ kind: 'add', column: newStoredColumn(input) });
      continue;
    }

    if (target.required && !old.required) {
      const missing = await rows.countNulls(trx, table.id, old);
      if (missing > 0) {
        throw badRequest(`${at}: column "${input.name}" cannot become required: ${rowsText(missing)} have no value`);
      }
    }

    if (keepsEveryValue(old, target)) {
      plans.push({ kind: 'keep', column: target, reindex: false });
      continue;
    }

    const keys: string[] = [];
    const values: SqlValue[] = [];
    const refused: string[] = [];
    for (const { k, v } of await rows.distinctValues(trx, table.id, old)) {
      const converted = convertValue(old.type, v, target);
      if (converted.ok) {
        keys.push(k);
        values.push(converted.value);
      } else {
        refused.push(k);
      }
    }
    if (refused.length > 0) {
      const count = await rows.countWithKeys(trx, table.id, old, refused);
      const sample = refused[0] ?? '';
      throw badRequest(
        `${at}: cannot change column "${input.name}" from ${old.type} to ${describeType(target)}: ` +
          `${rowsText(count)} hold values that cannot be converted (such as ${JSON.stringify(truncate(sample))})`,
      );
    }
    // Within the text family (text, url, email, select) a checked value is stored unchanged.
    if (SQL_TYPES[old.type] === SQL_TYPES[target.type]) {
      plans.push({
        kind: 'keep',
        column: target,
        reindex: INDEXED_TYPES.has(old.type) !== INDEXED_TYPES.has(target.type),
      });
    } else {
      plans.push({ kind: 'convert', from: old, column: { ...target, id: newId('col') }, keys, values });
    }
  }

  const kept = new Set(inputs.map((input) => input.name));
  for (const column of table.columns) {
    if (!kept.has(column.name)) await dropPhysicalColumn(trx, table.id, column.id);
  }
  for (const plan of plans) {
    if (plan.kind === 'add') {
      await addPhysicalColumn(trx, table.id, plan.column);
    } else if (plan.kind === 'keep') {
      if (plan.reindex) await syncColumnIndex(trx, table.id, plan.column);
    } else {
      // A fresh physical column of the new type, filled through the value map, replaces the old one.
      await addPhysicalColumn(trx, table.id, plan.column);
      await rows.copyConverted(trx, table.id, plan.from, plan.column, plan.keys, plan.values);
      await dropPhysicalColumn(trx, table.id, plan.from.id);
    }
  }
  return plans.map((plan) => plan.column);
}

/** Same type, and for select no option that is in use can have gone. */
function keepsEveryValue(old: StoredColumn, target: StoredColumn): boolean {
  if (old.type !== target.type) return false;
  if (old.type !== 'select') return true;
  const options = new Set(target.options ?? []);
  return (old.options ?? []).every((option) => options.has(option));
}

function describeType(column: StoredColumn): string {
  return column.type === 'select' ? 'select with the given options' : column.type;
}

function truncate(text: string): string {
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
}
