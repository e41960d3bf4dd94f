import type { Kysely } from 'kysely';
import type { Database } from '../db/types.js';
import { conflict, notFound } from '../errors.js';
import { toIso } from '../http/pagination.js';
import { newId } from '../ids.js';
import { replaceColumns } from './column-changes.js';
import { type ColumnInput, checkColumnInputs, newStoredColumn, toPublicColumn } from './columns.js';
import { createPhysicalTable, dropPhysicalTable } from './physical.js';
import * as repo from './repository.js';

export const tableNotFound = () => notFound('Table not found');

const isUniqueViolation = (error: unknown) => (error as { code?: unknown }).code === '23505';

export function toTable(record: repo.TableRecord) {
  return {
    id: record.id,
    name: record.name,
    description: record.description,
    columns: record.columns.map(toPublicColumn),
    row_count: Number(record.row_count),
    created_at: toIso(record.created_at),
    updated_at: toIso(record.updated_at),
  };
}

export interface CreateTableInput {
  name: string;
  description?: string | null | undefined;
  columns: ColumnInput[];
}

export interface UpdateTableInput {
  name?: string | undefined;
  description?: string | null | undefined;
  columns?: ColumnInput[] | undefined;
}

/** Tables: the catalog row and its physical table change together, in one transaction. */
export function createTableService(db: Kysely<Database>) {
  return {
    async list(orgId: string, page: { limit: number; offset: number }) {
      return (await repo.listTables(db, orgId, page)).map(toTable);
    },

    async get(orgId: string, id: string) {
      const record = await repo.findTable(db, orgId, id);
      if (!record) throw tableNotFound();
      return toTable(record);
    },

    async create(orgId: string, input: CreateTableInput) {
      checkColumnInputs(input.columns);
      const columns = input.columns.map(newStoredColumn);
      const id = newId('tbl');
      try {
        const record = await db.transaction().execute(async (trx) => {
          const inserted = await repo.insertTable(trx, {
            id,
            org_id: orgId,
            name: input.name,
            description: input.description ?? null,
            columns,
          });
          await createPhysicalTable(trx, id, columns);
          return inserted;
        });
        return toTable(record);
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(`Table "${input.name}" already exists`);
        throw error;
      }
    },

    async update(orgId: string, id: string, input: UpdateTableInput) {
      try {
        const record = await db.transaction().execute(async (trx) => {
          const table = await repo.lockTable(trx, orgId, id, 'definition');
          if (!table) throw tableNotFound();
          const patch: Parameters<typeof repo.updateTable>[2] = {};
          if (input.name !== undefined && input.name !== table.name) patch.name = input.name;
          if (input.description !== undefined) patch.description = input.description;
          if (input.columns !== undefined) patch.columns = await replaceColumns(trx, table, input.columns);
          if (Object.keys(patch).length === 0) return table;
          return repo.updateTable(trx, id, patch);
        });
        return toTable(record);
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(`Table "${input.name}" already exists`);
        throw error;
      }
    },

    async remove(orgId: string, id: string) {
      await db.transaction().execute(async (trx) => {
        const table = await repo.lockTable(trx, orgId, id, 'definition');
        if (!table) throw tableNotFound();
        await dropPhysicalTable(trx, id);
        await repo.deleteTable(trx, id);
      });
    },
  };
}

export type TableService = ReturnType<typeof createTableService>;
