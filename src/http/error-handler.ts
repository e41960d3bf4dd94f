import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { isDatabaseUnavailable, isDataException } from '../db/sqlstate.js';
import { AppError, type ErrorCode } from '../errors.js';
import { validationMessage } from './validation-message.js';

const FASTIFY_ERRORS: Record<string, { status: number; code: ErrorCode; message?: string }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 400,
    code: 'bad_request',
    message: 'Content-Type must be application/json',
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'bad_request', message: 'Invalid Content-Length' },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    code: 'bad_request',
    message: 'Body is empty but Content-Type is application/json',
  },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'bad_request', message: 'Body is not valid JSON' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', message: 'Request body is too large' },
};

export const MAX_PATH_PARAM_LENGTH = 200;

/**
 * Errors the router raises before any route runs: a malformed URL component or an over-long path parameter. Under
 * `langgraphPrefix` they take the LangGraph API's error shape, `{"detail": …}` (CONTRACTS §14), as its routes' own do.
 */
export function frameworkErrorReplies(langgraphPrefix: string | undefined) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const message =
      error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? `A path parameter is longer than ${MAX_PATH_PARAM_LENGTH} characters`
        : 'The URL has a malformed component';
    const langgraph = langgraphPrefix !== undefined && request.url.startsWith(`${langgraphPrefix}/`);
    reply.status(400).send(langgraph ? { detail: message } : { error: { message, code: 'bad_request' } });
  };
}

/** The one place errors become replies: `{ error: { message, code } }`, 5xx details only in the log. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof AppError) {
      if (error.statusCode >= 500) request.log.error({ err: error }, error.message);
      return reply.status(error.statusCode).send({ error: { message: error.message, code: error.code } });
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
      const message = validationMessage(error.validation, context, source);
      return reply.status(400).send({ error: { message, code: 'bad_request' } });
    }
    const known = error.code ? FASTIFY_ERRORS[error.code] : undefined;
    if (known) {
      return reply.status(known.status).send({ error: { message: known.message ?? error.message, code: known.code } });
    }
    if (error instanceof SyntaxError) {
      return reply.status(400).send({ error: { message: 'Body is not valid JSON', code: 'bad_request' } });
    }
    // A NUL byte in a path or query value, a number out of range…
    if (isDataException(error)) {
      return reply
        .status(400)
        .send({ error: { message: `A value in the request cannot be stored: ${error.message}`, code: 'bad_request' } });
    }
    if (isDatabaseUnavailable(error)) {
      request.log.error({ err: error }, 'database unavailable');
      return reply
        .status(503)
        .send({ error: { message: 'Service unavailable: the database cannot be reached', code: 'unavailable' } });
    }
    if (isResponseSerializationError(error)) {
      request.log.error({ err: error, issues: error.cause.issues }, 'response does not match its schema');
    } else if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return reply
        .status(error.statusCode)
        .send({ error: { message: error.message, code: codeForStatus(error.statusCode) } });
    } else {
      request.log.error({ err: error }, 'unexpected error');
    }
    return reply.status(500).send({ error: { message: 'Internal server error', code: 'internal' } });
  });

  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send({
      error: { message: `Route ${request.method} ${request.url.split('?')[0]} not found`, code: 'not_found' },
    });
  });
}

function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 409:
      return 'conflict';
    case 413:
      return 'payload_too_large';
    case 429:
      return 'rate_limited';
    default:
      return 'bad_request';
  }
}
