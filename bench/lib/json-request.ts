import http from 'node:http';

/** Where and as whom a bench sends its requests. */
export interface JsonTarget {
  port: number;
  key: string;
  agent: http.Agent;
}

// biome-ignore lint/suspicious/noExplicitAny: replies of a few known shapes, read field by field
export type Json = any;

/** One JSON request; rejects on any status other than `expect`. */
export function jsonRequest(
  target: JsonTarget,
  method: string,
  url: string,
  body?: unknown,
  expect?: number,
): Promise<Json> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port: target.port,
        method,
        path: url,
        agent: target.agent,
        headers: {
          authorization: `Bearer ${target.key}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          text += chunk;
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          if (expect !== undefined ? status !== expect : status >= 400)
            reject(new Error(`${method} ${url}: ${status} ${text.slice(0, 200)}`));
          else resolve(text ? JSON.parse(text) : null);
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
