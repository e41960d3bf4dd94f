/** A line that was cut because it exceeded the limit: its start and its full length. */
export interface LongLine {
  head: string;
  bytes: number;
}

export interface LineHandlers {
  line(text: string): void;
  longLine(line: LongLine): void;
}

/**
 * Splits a byte stream into lines without ever holding more than `maxBytes` of one line:
 * past the limit the rest of the line is only counted, so a runner cannot exhaust memory.
 */
export class LineSplitter {
  private parts: Buffer[] = [];
  private partBytes = 0;
  private overflowBytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly headBytes: number,
    private readonly handlers: LineHandlers,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(10, start);
      const end = newline === -1 ? chunk.length : newline;
      this.take(chunk.subarray(start, end));
      if (newline === -1) return;
      this.endLine();
      start = newline + 1;
    }
  }

  /** The stream ended: a last line without a newline still counts. */
  end(): void {
    if (this.partBytes > 0 || this.overflowBytes > 0) this.endLine();
  }

  private take(piece: Buffer): void {
    if (piece.length === 0) return;
    if (this.overflowBytes > 0) {
      this.overflowBytes += piece.length;
      return;
    }
    if (this.partBytes + piece.length > this.maxBytes) {
      const room = this.maxBytes - this.partBytes;
      if (room > 0) this.parts.push(piece.subarray(0, room));
      this.partBytes += Math.max(room, 0);
      this.overflowBytes = piece.length - Math.max(room, 0);
      return;
    }
    this.parts.push(piece);
    this.partBytes += piece.length;
  }

  private endLine(): void {
    const joined = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts, this.partBytes);
    const overflow = this.overflowBytes;
    this.parts = [];
    this.partBytes = 0;
    this.overflowBytes = 0;
    if (overflow > 0) {
      const head = joined.subarray(0, this.headBytes).toString('utf8');
      this.handlers.longLine({ head, bytes: joined.length + overflow });
      return;
    }
    let text = joined.toString('utf8');
    if (text.endsWith('\r')) text = text.slice(0, -1);
    this.handlers.line(text);
  }
}
