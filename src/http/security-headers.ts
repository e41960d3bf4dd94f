import type { FastifyInstance } from 'fastify';

/**
 * What a page of crewd may load: its own scripts, styles, images and API only, and no inline
 * script. No page may be framed (clickjacking), and nothing it sends is sniffed into another type.
 */
function contentSecurityPolicy(inlineStyles: boolean): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    inlineStyles ? "style-src 'self' 'unsafe-inline'" : "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const COMMON_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
};

/** The API reference (Swagger UI) adds a <style> element of its own; the console needs none. */
const STRICT = contentSecurityPolicy(false);
const DOCS = contentSecurityPolicy(true);

/** Sends the security headers with every answer: the console, the API reference and the API alike. */
export function installSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply) => {
    reply.header('content-security-policy', request.url.startsWith('/docs') ? DOCS : STRICT);
    for (const [name, value] of Object.entries(COMMON_HEADERS)) reply.header(name, value);
  });
}
