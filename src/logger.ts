import pino, { type Logger } from 'pino';

/** What follows an incoming-webhook path is its token, whatever slashes or case the router was sent. */
const TOKEN_PATH = /^(\/+webhooks\/+runs\/+)[^?#]+/i;
const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/** Undoes percent-encoding of ASCII (repeatedly, for double encoding) so an encoded path is seen for what it is. */
function decodeAscii(text: string): string {
  let current = text;
  for (let round = 0; round < 3 && current.includes('%'); round++) {
    const next = current.replace(/%([0-7][0-9a-f])/gi, (_, hex: string) =>
      String.fromCharCode(Number.parseInt(hex, 16)),
    );
    if (next === current) break;
    current = next;
  }
  return current;
}

/**
 * The request target as it may be logged: an incoming-webhook token is replaced in every form the
 * request line can take (absolute-form `http://host/…`, percent-encoded, doubled slashes).
 */
export function redactUrl(url: string): string {
  const path = decodeAscii(url).replace(ORIGIN, '');
  return TOKEN_PATH.test(path) ? path.replace(TOKEN_PATH, '$1[redacted]') : url;
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
