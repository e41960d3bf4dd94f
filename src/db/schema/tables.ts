import type { ColumnType as KyselyColumn, Selectable } from 'kysely';

/** The value types a user column can have (SPEC §2). */
export const COLUMN_TYPES = ['text', 'number', 'boolean', 'datetime', 'select', 'url', 'email', 'json'] as const;
export type ColumnKind = (typeof COLUMN_TYPES)[number];

/** One user column as the catalog stores it; `id` names the physical column and never leaves the service. */
export interface StoredColumn {
  id: string;
  name: string;
  type: ColumnKind;
  required: boolean;
  options?: string[];
}

/** The catalog of user tables; each row's data lives in its own physical table `data."<id>"`. */
export interface TableCatalogTable {
  id: string;
  org_id: string;
  name: string;
  description: string | null;
  columns: KyselyColumn<StoredColumn[], string, string>;
  row_count: KyselyColumn<number, number | undefined, number>;
  revision: KyselyColumn<number, number | undefined, number>;
  /** Bumped by every transaction that writes rows (lockTable 'rows'). */
  data_version: KyselyColumn<number, number | undefined, number>;
  created_at: KyselyColumn<Date, Date | string | undefined, never>;
  updated_at: KyselyColumn<Date, Date | string | undefined, Date | string>;
}

export type TableCatalogRow = Selectable<TableCatalogTable>;
