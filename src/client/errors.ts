/** An error answer of the API: its message, HTTP status and code (`{error: {message, code}}`). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code = 'unknown',
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The message of a crewd error body (`{error: {message, code}}`), or a fallback for anything else. */
export function errorMessage(error: unknown, fallback = 'Request failed'): string {
  const inner = errorBody(error);
  if (typeof inner?.message === 'string') return inner.message;
  if (error instanceof Error) return error.message;
  return fallback;
}

/** The ApiError an error answer stands for, from its parsed body (anything else gets a fallback message). */
export function apiError(body: unknown, response: Response): ApiError {
  const code = errorBody(body)?.code;
  return new ApiError(
    errorMessage(body, `${response.status} ${response.statusText}`.trim()),
    response.status,
    typeof code === 'string' ? code : 'unknown',
  );
}

function errorBody(error: unknown): { message?: unknown; code?: unknown } | undefined {
  if (error && typeof error === 'object' && 'error' in error) {
    const inner = (error as { error?: unknown }).error;
    if (inner && typeof inner === 'object') return inner as { message?: unknown; code?: unknown };
  }
  return undefined;
}
