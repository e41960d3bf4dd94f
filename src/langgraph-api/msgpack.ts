/**
 * A small MessagePack reader for LangGraph's checkpoints (what `JsonPlusSerializer` writes): maps,
 * arrays, strings, numbers, binaries. Extensions (LangGraph's messages, dates…) are never
 * constructed: each reads as `{ ext: <code> }`, so nothing of the checkpoint is called.
 */
export interface Ext {
  ext: number;
}

export type Packed =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | Ext
  | Packed[]
  | { [key: string]: Packed };

/** A 64-bit integer as a number when it is exactly one, else as a bigint. */
const exact = (value: bigint): number | bigint => {
  const asNumber = Number(value);
  return Number.isSafeInteger(asNumber) ? asNumber : value;
};

class Reader {
  private at = 0;
  private readonly view: DataView;

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  private take(length: number): number {
    const start = this.at;
    if (start + length > this.bytes.length) throw new Error('msgpack: the data ends inside a value');
    this.at += length;
    return start;
  }

  private u8 = () => this.view.getUint8(this.take(1));
  private u16 = () => this.view.getUint16(this.take(2));
  private u32 = () => this.view.getUint32(this.take(4));

  private str(length: number): string {
    const start = this.take(length);
    return new TextDecoder().decode(this.bytes.subarray(start, start + length));
  }

  private bin(length: number): Uint8Array {
    const start = this.take(length);
    return this.bytes.subarray(start, start + length);
  }

  private ext(length: number): Ext {
    const code = this.view.getInt8(this.take(1));
    this.take(length);
    return { ext: code };
  }

  private array(length: number): Packed[] {
    return Array.from({ length }, () => this.value());
  }

  private map(length: number): { [key: string]: Packed } {
    const out: { [key: string]: Packed } = {};
    for (let index = 0; index < length; index += 1) {
      const key = this.value();
      out[typeof key === 'string' ? key : JSON.stringify(key)] = this.value();
    }
    return out;
  }

  value(): Packed {
    const byte = this.u8();
    if (byte <= 0x7f) return byte;
    if (byte >= 0xe0) return byte - 0x100;
    if (byte >= 0x80 && byte <= 0x8f) return this.map(byte & 0x0f);
    if (byte >= 0x90 && byte <= 0x9f) return this.array(byte & 0x0f);
    if (byte >= 0xa0 && byte <= 0xbf) return this.str(byte & 0x1f);
    return this.tagged(byte);
  }

  private tagged(byte: number): Packed {
    const view = this.view;
    switch (byte) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return this.bin(this.u8());
      case 0xc5:
        return this.bin(this.u16());
      case 0xc6:
        return this.bin(this.u32());
      case 0xc7:
        return this.ext(this.u8());
      case 0xc8:
        return this.ext(this.u16());
      case 0xc9:
        return this.ext(this.u32());
      case 0xca:
        return view.getFloat32(this.take(4));
      case 0xcb:
        return view.getFloat64(this.take(8));
      case 0xcc:
        return this.u8();
      case 0xcd:
        return this.u16();
      case 0xce:
        return this.u32();
      case 0xcf:
        return exact(view.getBigUint64(this.take(8)));
      case 0xd0:
        return view.getInt8(this.take(1));
      case 0xd1:
        return view.getInt16(this.take(2));
      case 0xd2:
        return view.getInt32(this.take(4));
      case 0xd3:
        return exact(view.getBigInt64(this.take(8)));
      case 0xd4:
        return this.ext(1);
      case 0xd5:
        return this.ext(2);
      case 0xd6:
        return this.ext(4);
      case 0xd7:
        return this.ext(8);
      case 0xd8:
        return this.ext(16);
      case 0xd9:
        return this.str(this.u8());
      case 0xda:
        return this.str(this.u16());
      case 0xdb:
        return this.str(this.u32());
      case 0xdc:
        return this.array(this.u16());
      case 0xdd:
        return this.array(this.u32());
      case 0xde:
        return this.map(this.u16());
      case 0xdf:
        return this.map(this.u32());
      default:
        throw new Error(`msgpack: byte 0x${byte.toString(16)} starts no value`);
    }
  }
}

/** Reads one MessagePack value (throws on data that is not one). */
export function unpack(bytes: Uint8Array): Packed {
  return new Reader(bytes).value();
}
