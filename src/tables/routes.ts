import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { actorOf, principalOf } from '../auth/plugin.js';
import { commonErrors, conflictError } from '../http/error-schema.js';
import type { RowService } from './row-service.js';
import {
  bulkDeleteBody,
  bulkUpdateBody,
  createTableBody,
  deletedSchema,
  insertBody,
  insertedRowsSchema,
  listTablesQuery,
  queryBody,
  queryResultSchema,
  rowParams,
  rowSchema,
  rowValuesSchema,
  successSchema,
  tableListSchema,
  tableParams,
  tableSchema,
  updatedSchema,
  updateTableBody,
} from './schemas.js';
import type { TableService } from './service.js';

/** Data tables and their rows (SPEC §4, CONTRACTS §4–5); any key of the organization may use them. */
export const tableRoutes: FastifyPluginAsyncZod<{ tables: TableService; rows: RowService }> = async (
  app,
  { tables, rows },
) => {
  const tags = ['tables'];
  const rowTags = ['rows'];

  app.get(
    '/tables',
    {
      schema: {
        tags,
        operationId: 'listTables',
        summary: 'List the organization’s tables, newest first',
        description: 'Any key of the organization.',
        querystring: listTablesQuery,
        response: { 200: tableListSchema, ...commonErrors },
      },
    },
    async (request) => {
      const { orgId } = principalOf(request);
      return { tables: await tables.list(orgId, request.query), ...request.query };
    },
  );

  app.post(
    '/tables',
    {
      schema: {
        tags,
        operationId: 'createTable',
        summary: 'Create a table',
        description: 'Column names are unique; 409 when the table name is taken.',
        body: createTableBody,
        response: { 201: tableSchema, ...commonErrors, ...conflictError },
      },
    },
    async (request, reply) => {
      const { orgId } = principalOf(request);
      return reply.status(201).send(await tables.create(orgId, request.body));
    },
  );

  app.get(
    '/tables/:id',
    {
      schema: {
        tags,
        operationId: 'getTable',
        summary: 'Get a table',
        description: 'With its column definitions and row count.',
        params: tableParams,
        response: { 200: tableSchema, ...commonErrors },
      },
    },
    async (request) => tables.get(principalOf(request).orgId, request.params.id),
  );

  app.patch(
    '/tables/:id',
    {
      schema: {
        tags,
        operationId: 'updateTable',
        summary: 'Rename, describe, or replace the columns of a table',
        description:
          '`columns` replaces the definitions, matched by name; a changed type converts stored values or refuses the whole change with a 400 naming the column.',
        params: tableParams,
        body: updateTableBody,
        response: { 200: tableSchema, ...commonErrors, ...conflictError },
      },
    },
    async (request) => tables.update(principalOf(request).orgId, request.params.id, request.body),
  );

  app.delete(
    '/tables/:id',
    {
      schema: {
        tags,
        operationId: 'deleteTable',
        summary: 'Delete a table and all its rows (irreversible)',
        description: 'Every row goes with it.',
        params: tableParams,
        response: { 200: successSchema, ...commonErrors },
      },
    },
    async (request) => {
      await tables.remove(principalOf(request).orgId, request.params.id);
      return { success: true as const };
    },
  );

  app.post(
    '/tables/:id/query',
    {
      schema: {
        tags: rowTags,
        operationId: 'queryRows',
        summary: 'Query rows: filter, sort, paginate',
        description:
          'Filter groups nest up to 5 deep with at most 100 conditions; default sort `created_at` descending, ties on `id`.',
        params: tableParams,
        body: queryBody,
        response: { 200: queryResultSchema, ...commonErrors },
      },
    },
    async (request) => {
      const input = request.body ?? { sort_direction: 'desc' as const, limit: 50, offset: 0 };
      return rows.query(principalOf(request).orgId, request.params.id, input);
    },
  );

  app.post(
    '/tables/:id/rows',
    {
      schema: {
        tags: rowTags,
        operationId: 'insertRows',
        summary: 'Insert a row, or a batch of 1 to 1000 rows',
        description: 'All or nothing: one bad row refuses the batch, naming its index and column.',
        params: tableParams,
        body: insertBody,
        response: { 201: z.union([rowSchema, insertedRowsSchema]), ...commonErrors },
      },
    },
    async (request, reply) => {
      const result = await rows.insert(principalOf(request).orgId, request.params.id, request.body, actorOf(request));
      return reply.status(201).send(result.batch ? { rows: result.rows } : result.row);
    },
  );

  app.patch(
    '/tables/:id/rows',
    {
      schema: {
        tags: rowTags,
        operationId: 'updateRows',
        summary: 'Update every row matching a filter',
        description: 'Answers the number of rows changed.',
        params: tableParams,
        body: bulkUpdateBody,
        response: { 200: updatedSchema, ...commonErrors },
      },
    },
    async (request) => rows.updateMany(principalOf(request).orgId, request.params.id, request.body, actorOf(request)),
  );

  app.delete(
    '/tables/:id/rows',
    {
      schema: {
        tags: rowTags,
        operationId: 'deleteRows',
        summary: 'Delete every row matching a filter',
        description:
          'Answers the number of rows deleted. A filter matching more than MAX_BULK_DELETE_ROWS rows (100,000 by default) is refused with 400 and nothing is deleted.',
        params: tableParams,
        body: bulkDeleteBody,
        response: { 200: deletedSchema, ...commonErrors },
      },
    },
    async (request) => rows.removeMany(principalOf(request).orgId, request.params.id, request.body),
  );

  app.get(
    '/tables/:id/rows/:rowId',
    {
      schema: {
        tags: rowTags,
        operationId: 'getRow',
        summary: 'Get a row',
        description: 'Values by column name, with id, created_at and updated_at.',
        params: rowParams,
        response: { 200: rowSchema, ...commonErrors },
      },
    },
    async (request) => rows.get(principalOf(request).orgId, request.params.id, request.params.rowId),
  );

  app.patch(
    '/tables/:id/rows/:rowId',
    {
      schema: {
        tags: rowTags,
        operationId: 'updateRow',
        summary: 'Update a row: only the columns given change',
        description: 'Columns left out keep their values.',
        params: rowParams,
        body: rowValuesSchema,
        response: { 200: rowSchema, ...commonErrors },
      },
    },
    async (request) =>
      rows.update(principalOf(request).orgId, request.params.id, request.params.rowId, request.body, actorOf(request)),
  );

  app.delete(
    '/tables/:id/rows/:rowId',
    {
      schema: {
        tags: rowTags,
        operationId: 'deleteRow',
        summary: 'Delete a row',
        description: 'Irreversible.',
        params: rowParams,
        response: { 200: successSchema, ...commonErrors },
      },
    },
    async (request) => {
      await rows.remove(principalOf(request).orgId, request.params.id, request.params.rowId);
      return { success: true as const };
    },
  );
};
