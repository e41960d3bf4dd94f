import pino, { type Logger } from 'pino';

/** Path segments that are secrets: the incoming-webhook token. */
const SECRET_PATHS = /^(\/webhooks\/runs\/)[^/?]+/;

export function redactUrl(url: string): string {
  return url.replace(SECRET_PATHS, '$1[redacted]');
}

/** JSON logs; credentials are removed wherever they could appear. */
export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: {
        paths: [
          'req.headers.authorization',
          'headers.authorization',
          'authorization',
          'key',
          'secret',
          'token',
          '*.key',
          '*.secret',
          '*.token',
          'api_key.key',
        ],
        censor: '[redacted]',
      },
      serializers: {
        req: (req: { method: string; url: string; id: string; ip?: string }) => ({
          method: req.method,
          url: redactUrl(req.url),
          id: req.id,
          remoteAddress: req.ip,
        }),
      },
    },
    destination,
  );
}
