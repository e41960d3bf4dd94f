import { constants, type Stats } from 'node:fs';
import { type FileHandle, open, realpath } from 'node:fs/promises';
import path from 'node:path';

/**
 * Reading and writing files in folders a bundle or a build step made (a version's project folder,
 * an environment of the cache): what lies there is not trusted. A path is taken only when it leads,
 * once its links are resolved, into the folder crewd meant; it is opened without following a link
 * and without blocking (a FIFO), and used only when it is a regular file of a bounded size.
 */

/** The largest project file crewd reads itself (a lock file, a requirements file). */
export const PROJECT_FILE_MAX_BYTES = 64 * 1024 * 1024;

const { O_RDONLY, O_WRONLY, O_CREAT, O_NOFOLLOW, O_NONBLOCK } = constants;

/** Where `relative` leads inside `root`, links resolved; throws when it leads outside. */
async function resolvedInside(root: string, relative: string): Promise<string> {
  const realRoot = await realpath(root);
  const real = await realpath(path.resolve(root, relative));
  if (real !== realRoot && !real.startsWith(`${realRoot}${path.sep}`)) {
    throw new Error(`${relative} leads outside ${root}`);
  }
  return real;
}

export interface FileRead {
  data: Buffer;
  mode: number;
}

async function regularFile(handle: FileHandle, name: string, maxBytes: number): Promise<Stats> {
  const info = await handle.stat();
  if (!info.isFile()) throw new Error(`${name} is not a regular file`);
  if (info.size > maxBytes) throw new Error(`${name} is larger than ${maxBytes} bytes`);
  return info;
}

/** A regular file of at most `maxBytes` at `relative` in `root` (links inside `root` followed), and its mode. */
export async function readInside(root: string, relative: string, maxBytes: number): Promise<FileRead> {
  const handle = await open(await resolvedInside(root, relative), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  try {
    const { size, mode } = await regularFile(handle, relative, maxBytes);
    const data = Buffer.alloc(size);
    let read = 0;
    while (read < size) {
      const { bytesRead } = await handle.read(data, read, size - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    return { data: data.subarray(0, read), mode };
  } finally {
    await handle.close();
  }
}

/** Like readInside, answering null when the file is not there. */
export async function readInsideIfThere(root: string, relative: string, maxBytes: number): Promise<FileRead | null> {
  return readInside(root, relative, maxBytes).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return null;
    throw error;
  });
}

/** Writes `data` to `file` (relative to `root`, or absolute): its folder must lie inside `root`, the file be a regular one or new. */
export async function writeInside(root: string, file: string, data: string | Buffer): Promise<void> {
  const folder = await resolvedInside(root, path.dirname(file));
  const name = path.join(folder, path.basename(file));
  const handle = await open(name, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0o644);
  try {
    const info = await regularFile(handle, file, Number.POSITIVE_INFINITY);
    // A hard link made there would lead the write to another name's contents.
    if (info.nlink > 1) throw new Error(`${file} has other names (hard links)`);
    await handle.truncate(0);
    await handle.writeFile(data);
  } finally {
    await handle.close();
  }
}
