import { z } from 'zod';
import type { Db } from '../db/types.js';
import { toIso } from '../http/pagination.js';
import * as repo from './store-repo.js';

/** A namespace label: LangGraph's rules (not empty, no "."), so that labels joined by "." come apart again. */
const label = z
  .string()
  .min(1, 'a namespace label must not be empty')
  .refine((value) => !value.includes('.'), 'a namespace label must not contain "."');
export const namespaceSchema = z.array(label);

type Row = NonNullable<Awaited<ReturnType<typeof repo.getItem>>>;

/** A stored row as the API and a graph's store see it: the namespace as its labels. */
export const toItem = (row: Row) => ({
  namespace: row.namespace.split('.'),
  key: row.key,
  value: row.value,
  created_at: toIso(row.created_at),
  updated_at: toIso(row.updated_at),
});

/** Why semantic search is refused (CONTRACTS §14): crewd's store has no embedding index. */
export const noIndexMessage = (field: string) =>
  `${field}: semantic search needs an embedding index, and crewd's store has none; search with namespace_prefix and filter instead`;

export interface NamespaceQuery {
  prefix?: string[] | null | undefined;
  suffix?: string[] | null | undefined;
  max_depth?: number | null | undefined;
  limit: number;
  offset: number;
}

/** The organization's namespaces matching `prefix` and `suffix`, cut at `max_depth`, each once, in order. */
export async function listNamespaces(db: Db, orgId: string, query: NamespaceQuery): Promise<string[][]> {
  const { prefix, suffix, max_depth, limit, offset } = query;
  const seen = new Set<string>();
  const found: string[][] = [];
  for (const joined of await repo.namespaces(db, orgId)) {
    const labels = joined.split('.');
    if (prefix?.some((part, i) => labels[i] !== part)) continue;
    if (suffix?.some((part, i) => labels[labels.length - suffix.length + i] !== part)) continue;
    const cut = max_depth ? labels.slice(0, max_depth) : labels;
    const key = cut.join('.');
    if (seen.has(key)) continue;
    seen.add(key);
    found.push(cut);
  }
  return found.slice(offset, offset + limit);
}
