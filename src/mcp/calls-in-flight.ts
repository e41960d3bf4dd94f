import type { RequestId } from '@modelcontextprotocol/sdk/types.js';

/**
 * The tools/call requests this instance is answering, by API key and request id. Without sessions, a client's
 * notifications/cancelled comes in a request of its own, to a server object of its own: it finds its call here.
 */
export class CallsInFlight {
  private readonly calls = new Map<string, AbortController>();

  private static key(keyId: string, requestId: RequestId): string {
    return `${keyId} ${typeof requestId}:${requestId}`;
  }

  /** A call begins: its signal is aborted when the same key cancels the same request id. */
  begin(keyId: string, requestId: RequestId): { signal: AbortSignal; end: () => void } {
    const key = CallsInFlight.key(keyId, requestId);
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
  cancel(keyId: string, requestId: RequestId, reason?: string): boolean {
    const controller = this.calls.get(CallsInFlight.key(keyId, requestId));
    controller?.abort(reason);
    return controller !== undefined;
  }
}
