import type { ReactNode } from 'react';

export interface ListColumn<T> {
  header: string;
  cell(row: T): ReactNode;
  /** `actions` keeps a cell's buttons on one line. */
  className?: string;
  /** A fixed table's column width (CSS), wide enough for the column's words. */
  width?: string;
}

/** Records as a table with one header row; on a narrow screen it scrolls sideways inside its box. */
export function ListTable<T>({
  label,
  rows,
  rowKey,
  columns,
  fixed = false,
  empty,
}: {
  label: string;
  rows: readonly T[] | undefined;
  rowKey(row: T): string;
  columns: ListColumn<T>[];
  /** Fixed column widths, long values wrapped: a long list lays out without measuring every cell. */
  fixed?: boolean;
  /** Said instead of an empty table. */
  empty?: string;
}) {
  if (empty !== undefined && rows?.length === 0) return <p>{empty}</p>;
  return (
    // A region the keyboard can reach: on a narrow screen it scrolls sideways, also with no link in it.
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling box must be focusable to scroll by keyboard
    <section className="scroll" aria-label={label} tabIndex={0}>
      <table aria-label={label} className={fixed ? 'fixed' : undefined}>
        {fixed ? (
          <colgroup>
            {columns.map((column) => (
              <col key={column.header} style={column.width ? { width: column.width } : undefined} />
            ))}
          </colgroup>
        ) : null}
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col" key={column.header}>
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows?.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((column) => (
                <td key={column.header} className={column.className}>
                  {column.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
