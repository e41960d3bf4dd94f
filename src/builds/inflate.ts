import { Readable, Transform, type TransformCallback } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { UnsafeBundle } from './bundle-tree.js';

/** Compressed bytes handed to zlib at a time: what one slice inflates to (at most ~1000 times) bounds memory. */
const SLICE_BYTES = 16 * 1024;
/** Inflated bytes per zlib call: larger chunks, fewer trips to the thread pool (16 KiB ones are 20 times slower). */
const CHUNK_BYTES = 256 * 1024;
const GZIP_MAGIC = [0x1f, 0x8b];

/** The stored bundle in slices, so that each waits for the inflating stream to want more. */
function slices(data: Buffer): Readable {
  let offset = 0;
  return new Readable({
    read() {
      if (offset >= data.length) {
        this.push(null);
        return;
      }
      this.push(data.subarray(offset, offset + SLICE_BYTES));
      offset += SLICE_BYTES;
    },
  });
}

/**
 * The inflated tar, passed on to the parser until `archiveEnded`; fails as soon as more than
 * `maxBytes` came out, or when a second gzip starts inside (the parser would inflate it at once).
 */
export class InflatedLimit extends Transform {
  private total = 0;
  private readonly head: number[] = [];
  private ended = false;

  constructor(private readonly maxBytes: number) {
    super();
  }

  /**
   * The tar parser saw the archive's end: what follows (padding, or a bomb's zeros) is only counted,
   * as the parser would keep all of it in one growing buffer.
   */
  archiveEnded(): void {
    this.ended = true;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const checking = this.head.length < GZIP_MAGIC.length;
    for (let i = 0; this.head.length < GZIP_MAGIC.length && i < chunk.length; i++) this.head.push(chunk[i] as number);
    if (checking && this.head.length === GZIP_MAGIC.length && this.head.every((byte, i) => byte === GZIP_MAGIC[i])) {
      done(new UnsafeBundle('it is gzipped twice: send a tar gzipped once (`tar -czf`)'));
      return;
    }
    this.total += chunk.length;
    if (this.total > this.maxBytes) {
      done(new UnsafeBundle(`more than ${this.maxBytes / 1024 / 1024} MiB once inflated`));
      return;
    }
    done(null, this.ended ? undefined : chunk);
  }
}

/**
 * The streams that inflate a stored bundle into its tar, for `pipeline(...inflating(b, max), parser)`:
 * inflated in zlib's thread pool a slice at a time, with back-pressure, so that neither memory nor
 * the event loop depends on how far the bundle inflates; stops past `maxBytes` of tar.
 */
export function inflating(bundle: Buffer, maxBytes: number): [Readable, Transform, InflatedLimit] {
  return [slices(bundle), createGunzip({ chunkSize: CHUNK_BYTES }), new InflatedLimit(maxBytes)];
}
