import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/**
 * The tools/call requests this instance is answering, by API key, the client's Mcp-Session-Id and request id. A
 * client's notifications/cancelled comes in a request of its own, to a server object of its own: it finds its call
 * here, or, answered by another instance, in the database (calls-store.ts). The session id keeps apart clients of one
 * key, whose request ids start alike.
 */
export class CallsInFlight {
  private readonly calls = new Map<string, AbortController>();

  private static key(client: string, requestId: RequestId): string {
    return `${client} ${typeof requestId}:${requestId}`;
  }

  /** A call begins: its signal is aborted when the same client (key and session) cancels the same request id. */
  begin(client: string, requestId: RequestId): { signal: AbortSignal; end: () => void } {
    const key = CallsInFlight.key(client, requestId);
    const controller = new AbortController();
    this.calls.set(key, controller);
    return {
      signal: controller.signal,
      end: () => {
        if (this.calls.get(key) === controller) this.calls.delete(key);
      },
    };
  }

  /** notifications/cancelled: false when no such call is in flight here (ended, or on another instance). */
  cancel(client: string, requestId: RequestId, reason?: string): boolean {
    const controller = this.calls.get(CallsInFlight.key(client, requestId));
    controller?.abort(reason);
    return controller !== undefined;
  }
}
