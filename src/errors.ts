export type ErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'limit_exceeded'
  | 'payload_too_large'
  | 'rate_limited'
  | 'unavailable'
  | 'internal';

/** The one error type routes and services throw; the error handler turns it into the reply. */
export class AppError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

/** Whether `error` is an AppError answered with `status` (a caller that treats one refusal as no failure). */
export const hasStatus = (error: unknown, status: number): boolean =>
  error instanceof AppError && error.statusCode === status;

export const badRequest = (message: string) => new AppError(400, 'bad_request', message);
export const notFound = (message: string) => new AppError(404, 'not_found', message);
export const conflict = (message: string) => new AppError(409, 'conflict', message);
/** A well-formed request that an operator's limit refuses; the message names the setting. */
export const limitExceeded = (message: string) => new AppError(422, 'limit_exceeded', message);
export const forbidden = (message: string) => new AppError(403, 'forbidden', message);
