import { describe, expect, it } from 'vitest';
import type { StoredColumn } from '../../src/db/schema/tables.js';
import { tableFields } from '../../src/tables/filter.js';
import { indexPlanFor, matchesAll } from '../../src/tables/filter-shape.js';

const columns: StoredColumn[] = [
  { id: 'col_score', name: 'score', type: 'number', required: false },
  { id: 'col_stage', name: 'stage', type: 'select', required: false, options: ['a', 'b'] },
  { id: 'col_kind', name: 'kind', type: 'select', required: false, options: ['x', 'y'] },
  { id: 'col_tier', name: 'tier', type: 'select', required: false, options: ['1', '2'] },
  { id: 'col_zone', name: 'zone', type: 'select', required: false, options: ['n', 's'] },
  { id: 'col_done', name: 'done', type: 'boolean', required: false },
  { id: 'col_due', name: 'due', type: 'datetime', required: false },
  { id: 'col_title', name: 'title', type: 'text', required: false },
];
const fields = tableFields(columns);
const field = (name: string) => {
  const found = fields.get(name);
  if (!found) throw new Error(name);
  return found;
};
const plan = (filter: unknown, sort = 'created_at') => indexPlanFor(filter, fields, field(sort));
const c = (column: string, operator: string, value?: unknown) => ({ column, operator, value });

describe('the index a filter shape wants', () => {
  it('pins equality columns first, then the sort column when the filter ranges over it', () => {
    const wanted = plan({ and: [c('stage', 'eq', 'a'), c('score', 'gte', 5)] }, 'score');
    expect(wanted).toMatchObject({ key: ['col_stage', 'col_score'], include: [] });
    expect(wanted?.suffix).toMatch(/^a_[0-9a-f]{10}$/);
  });

  it('ranges over the filtered column when the sort is elsewhere, carrying the rest', () => {
    expect(plan({ and: [c('stage', 'eq', 'a'), c('score', 'lt', 5), c('due', 'gt', '2024-01-01')] }, 'title')).toEqual(
      expect.objectContaining({ key: ['col_stage', 'col_due'], include: ['col_score'] }),
    );
    expect(plan({ and: [c('done', 'eq', true)] }, 'score')).toEqual(
      expect.objectContaining({ key: ['col_done', 'col_score'], include: [] }),
    );
  });

  it('treats in, is_null and eq null as pinning; nested groups are only read', () => {
    const wanted = plan({
      and: [c('stage', 'in', ['a', 'b']), c('due', 'is_null'), { or: [c('score', 'gt', 1), c('score', 'lt', -1)] }],
    });
    expect(wanted).toMatchObject({ key: ['col_due', 'col_stage', 'created_at'], include: ['col_score'] });
    expect(plan({ and: [c('stage', 'eq', null), c('done', 'in', [true, null])] }, 'title')).toMatchObject({
      key: ['col_stage'],
      include: ['col_done'],
    });
  });

  it('is the same for the same shape whatever the values', () => {
    const a = plan({ and: [c('stage', 'eq', 'a'), c('score', 'gte', 5)] }, 'score');
    const b = plan({ and: [c('score', 'gte', 900), c('stage', 'eq', 'b')] }, 'score');
    expect(a?.suffix).toBe(b?.suffix);
  });

  it('wants nothing for no filter, a column the table indexes alone, text, or too many columns', () => {
    expect(plan(undefined)).toBeUndefined();
    expect(plan({ and: [] })).toBeUndefined();
    expect(plan({ and: [c('score', 'gte', 5)] }, 'score')).toBeUndefined();
    expect(plan({ and: [c('stage', 'eq', 'a'), c('title', 'contains', 'x')] })).toBeUndefined();
    expect(plan({ and: [c('score', 'neq', 5)] })).toBeUndefined();
    expect(plan({ or: [c('stage', 'eq', 'a'), c('stage', 'eq', 'b')] })).toBeUndefined();
    const fourSelects = { and: ['stage', 'kind', 'tier', 'zone'].map((name) => c(name, 'eq', 'a')) };
    expect(plan(fourSelects, 'score')).toBeUndefined();
    expect(plan({ and: [...fourSelects.and.slice(0, 3), c('done', 'eq', true)] }, 'score')).toBeUndefined();
    expect(plan({ and: fourSelects.and.slice(0, 3) })).toMatchObject({
      key: ['col_kind', 'col_stage', 'col_tier', 'created_at'],
    });
  });

  it('knows when every row matches', () => {
    expect(matchesAll(undefined)).toBe(true);
    expect(matchesAll(null)).toBe(true);
    expect(matchesAll({ and: [] })).toBe(true);
    expect(matchesAll({ or: [] })).toBe(false);
    expect(matchesAll({ and: [c('score', 'gt', 1)] })).toBe(false);
  });
});
