import { ApiError, type CrewdClient, createCrewdClient, type StreamEvent, streamEvents } from '../client/index.js';

/** A usage or connection problem (exit code 2 unless said), with what to fix. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 2,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The CLI's view of one service: the typed client, and its event streams followed to their end. */
export interface Api {
  client: CrewdClient;
  /** Reads an event stream (a path of the API) until its `complete`, which it answers. */
  follow(path: string, onEvent: (event: StreamEvent) => void, options?: { lastEventId?: number }): Promise<StreamEvent>;
}

/** Dropped connections and ended stream lifetimes in a row before `follow` gives up. */
const RECONNECTS = 10;

export function createApi(url: string, key: string): Api {
  const baseUrl = url.replace(/\/+$/, '');
  const reach = reaching(baseUrl);
  return {
    client: createCrewdClient({ baseUrl, apiKey: key, fetch: reach }),
    async follow(path, onEvent, options = {}) {
      const events = streamEvents({
        url: `${baseUrl}${path}`,
        apiKey: key,
        untilComplete: true,
        retries: RECONNECTS,
        fetch: reach,
        ...(options.lastEventId === undefined ? {} : { lastEventId: options.lastEventId }),
      });
      for await (const event of events) {
        if (event.data.type === 'complete') return event;
        // `timeout` and `error` are about the stream, not its subject: the reader reopens it.
        if (event.data.type !== 'timeout' && event.data.type !== 'error') onEvent(event);
      }
      throw new CliError(`The event stream of ${path} closed before the end; try again`);
    },
  };
}

/** fetch, with a failure to connect told as what to check. */
function reaching(baseUrl: string): typeof fetch {
  return async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (error) {
      if ((error as Error).name === 'AbortError') throw error;
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(
        `Cannot reach crewd at ${baseUrl} (${cause?.code ?? cause?.message ?? (error as Error).message}): check the URL (crewd login --url, or CREWD_URL) and that the service runs`,
      );
    }
  };
}

/** What the CLI says of an error of the API: its message, and what to fix when that is known. */
export function apiErrorMessage(error: ApiError): string {
  if (error.status === 401) {
    return `${error.message}: check the API key (crewd login --key, or CREWD_API_KEY): use the admin key crewd printed at its first start; lost it? on the service's machine, stop crewd and run \`npx crewd admin-key\` for a new one`;
  }
  return error.message;
}

export { ApiError };
