import type { DataRow } from './table-rows.js';

/** The plain table's side: the same questions in hand-written SQL. */
export interface Plain {
  exec(text: string, params: unknown[]): Promise<void>;
  rows<T>(text: string, params: unknown[]): Promise<T[]>;
}

/** The indexes crewd built for the table's filter shapes, ready for use. */
export async function shapeIndexes(plain: Plain, tableId: string): Promise<string[]> {
  const rows = await plain.rows<{ name: string }>(
    `select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid
     join pg_class t on t.oid = i.indrelid where t.relname = $1 and c.relname ~ '_a_[0-9a-f]+$' and i.indisvalid`,
    [tableId],
  );
  return rows.map((row) => row.name);
}

export const PLAIN_DDL = [
  `create table plain (id text collate "C" primary key, title text, score double precision, active boolean,
     due timestamptz, stage text, meta jsonb)`,
  'create index plain_stage on plain (stage)',
  'create index plain_score on plain (score)',
];
const PLAIN_ROWS = `select id, title, score, active, due, stage, meta from plain
  where stage = $1 and score >= $2 order by score desc, id desc limit 50`;
const PLAIN_COUNT = 'select count(*) from plain where stage = $1 and score >= $2';

export function plainInsert(rows: DataRow[]): [string, unknown[]] {
  const params: unknown[] = [];
  const tuples = rows.map((row) => {
    const base = params.length;
    params.push(row.id, row.title, row.score, row.active, row.due, row.stage, JSON.stringify(row.meta));
    return `($${base + 1}, $${base + 2}, $${base + 3}, $${base + 4}, $${base + 5}, $${base + 6}, $${base + 7})`;
  });
  return [`insert into plain (id, title, score, active, due, stage, meta) values ${tuples.join(', ')}`, params];
}

/** The question a query through the API answers: the first 50 rows and how many match in all. */
export async function plainQuery(plain: Plain, withCount: boolean): Promise<void> {
  const params = ['won', 500];
  if (!withCount) return plain.exec(PLAIN_ROWS, params);
  await Promise.all([plain.exec(PLAIN_ROWS, params), plain.exec(PLAIN_COUNT, params)]);
}
