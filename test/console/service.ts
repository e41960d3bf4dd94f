import { ADMIN_KEY } from '../helpers/app.js';
import { createRunContext, crew, deploy, type RunContext } from '../runs/helpers.js';

export { ADMIN_KEY, crew, deploy };

/** The service on a fresh database, listening on a real port, as the console's browser sees it. */
export function startService(env: Record<string, string> = {}): Promise<RunContext> {
  return createRunContext({ WEBHOOK_ALLOW_PRIVATE_URLS: 'true', ...env });
}
