import { useQueries } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { type Schemas, unwrap } from '../../../src/client/index.js';
import { useSession } from '../session.js';
import { ErrorText } from './ui.js';

export type Row = { id: string; _meta?: { created_at?: string }; [column: string]: unknown };

const ROW_HEIGHT = 36;
const VIEW_HEIGHT = 432;
const PAGE = 100;

export interface GridQuery {
  filter: Record<string, unknown> | null;
  sortBy: string;
  direction: 'asc' | 'desc';
}

/**
 * Rows in a scrolling grid that fetches only the pages of 100 rows in view, so a table of 100,000 rows scrolls
 * from top to bottom without ever holding more than a few pages.
 */
export function RowGrid({
  tableId,
  columns,
  query,
  onSort,
  onEdit,
}: {
  tableId: string;
  columns: Schemas['Column'][];
  query: GridQuery;
  onSort(column: string): void;
  onEdit(row: Row): void;
}) {
  const { client } = useSession();
  const [scrollTop, setScrollTop] = useState(0);
  // The last known count of this query stays while other pages load, so the scroll height never collapses.
  const queryKey = JSON.stringify(query);
  const known = useRef({ queryKey, total: 0 });
  const knownTotal = known.current.queryKey === queryKey ? known.current.total : 0;
  const first = Math.floor(scrollTop / ROW_HEIGHT);
  const last = first + Math.ceil(VIEW_HEIGHT / ROW_HEIGHT) + 1;
  // No page past the last row, so the end of a table costs one request, not a second one for an empty page.
  const lastRow = Math.max(first, Math.min(last, knownTotal - 1));
  const pageNumbers = [...new Set([Math.floor(first / PAGE), Math.floor(lastRow / PAGE)])];
  const pages = useQueries({
    queries: pageNumbers.map((page) => ({
      queryKey: ['rows', tableId, query, page],
      queryFn: () =>
        unwrap(
          client.POST('/v1/tables/{id}/query', {
            params: { path: { id: tableId } },
            body: {
              ...(query.filter ? { filter: query.filter } : {}),
              sort_by: query.sortBy,
              sort_direction: query.direction,
              limit: PAGE,
              offset: page * PAGE,
            },
          }),
        ),
    })),
  });
  const loaded = pages.find((page) => page.data)?.data?.total;
  if (loaded !== undefined) known.current = { queryKey, total: loaded };
  const total = loaded ?? knownTotal;
  const error = pages.find((page) => page.error)?.error;
  const visible: { index: number; row: Row }[] = [];
  pageNumbers.forEach((page, at) => {
    const rows = (pages[at]?.data?.rows ?? []) as Row[];
    rows.forEach((row, offset) => {
      const index = page * PAGE + offset;
      if (index >= first && index <= last) visible.push({ index, row });
    });
  });
  const headers = ['id', ...columns.map((column) => column.name), 'created_at'];
  const template = `repeat(${headers.length}, minmax(9rem, 1fr)) 5rem`;
  return (
    <>
      <p aria-live="polite">{total === 1 ? '1 row' : `${total} rows`}</p>
      <ErrorText error={error} />
      <div
        className="grid-scroll"
        style={{ height: VIEW_HEIGHT + ROW_HEIGHT }}
        onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}
      >
        <table aria-label="Rows" aria-rowcount={total + 1} className="grid">
          <thead className="grid-head">
            <tr aria-rowindex={1} className="grid-row" style={{ gridTemplateColumns: template }}>
              {headers.map((name) => (
                <th scope="col" key={name} aria-sort={sortState(query, name)}>
                  <button type="button" onClick={() => onSort(name)}>
                    {name}
                    {query.sortBy === name ? (query.direction === 'asc' ? ' ↑' : ' ↓') : ''}
                  </button>
                </th>
              ))}
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody className="grid-body" style={{ height: total * ROW_HEIGHT }}>
            {visible.map(({ index, row }) => (
              <tr
                aria-rowindex={index + 2}
                key={row.id}
                className="grid-row"
                style={{ top: index * ROW_HEIGHT, height: ROW_HEIGHT, gridTemplateColumns: template }}
              >
                <td>{row.id}</td>
                {columns.map((column) => (
                  <td key={column.name}>{display(row[column.name])}</td>
                ))}
                <td>{row._meta?.created_at ?? ''}</td>
                <td>
                  <button type="button" aria-label={`Edit row ${row.id}`} onClick={() => onEdit(row)}>
                    Edit
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

function sortState(query: GridQuery, column: string) {
  if (query.sortBy !== column) return undefined;
  return query.direction === 'asc' ? 'ascending' : 'descending';
}

function display(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}
