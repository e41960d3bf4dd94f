import type { FastifyError, FastifyInstance } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { isDatabaseUnavailable, isDataException } from '../db/sqlstate.js';
import { AppError } from '../errors.js';
import { UnreadableBody } from '../http/json-body.js';
import { validationMessage } from '../http/validation-message.js';

/** The error body the official SDKs read (`httpx.HTTPStatusError` text, JS `HTTPError`). */
export const detailBody = (detail: string) => ({ detail });

/** An error of this API whose status differs from /v1's (e.g. 422 for a body the schema refuses). */
export const unprocessable = (message: string) => new AppError(422, 'bad_request', message);

/**
 * Errors of the Agent Server API as the official server answers them: `{"detail": "…"}`, 422 for a
 * request its schema refuses, crewd's statuses otherwise (404 for another organization's resource).
 */
export function installDetailErrors(app: FastifyInstance, prefix: string): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof UnreadableBody) return reply.status(422).send(detailBody(error.message));
    if (error instanceof AppError) {
      if (error.statusCode >= 500) request.log.error({ err: error }, error.message);
      return reply.status(error.statusCode).send(detailBody(error.message));
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const context = error.validationContext;
      const source =
        context === 'body'
          ? request.body
          : context === 'querystring'
            ? request.query
            : context === 'params'
              ? request.params
              : request.headers;
      return reply.status(422).send(detailBody(validationMessage(error.validation, context, source)));
    }
    if (error instanceof SyntaxError || error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
      return reply.status(422).send(detailBody('Body is not valid JSON'));
    }
    if (isDataException(error)) {
      return reply.status(422).send(detailBody(`A value in the request cannot be stored: ${error.message}`));
    }
    if (isDatabaseUnavailable(error)) {
      request.log.error({ err: error }, 'database unavailable');
      return reply.status(503).send(detailBody('Service unavailable: the database cannot be reached'));
    }
    if (isResponseSerializationError(error)) {
      request.log.error({ err: error, issues: error.cause.issues }, 'response does not match its schema');
    } else if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return reply.status(error.statusCode).send(detailBody(error.message));
    } else {
      request.log.error({ err: error }, 'unexpected error');
    }
    return reply.status(500).send(detailBody('Internal server error'));
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    reply.status(404).send(detailBody(`Route ${request.method} ${path} not found (the LangGraph API under ${prefix})`));
  });
}
