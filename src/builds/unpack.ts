import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { x as extract, Parser, type ReadEntry } from 'tar';
import { badRequest } from '../errors.js';

/** CONTRACTS §8: a bundle past these is refused. */
export const BUNDLE_LIMITS = { maxEntries: 20_000, maxUnpackedBytes: 512 * 1024 * 1024 };

/** Files read at inspection, for project detection: the root's project files and CrewAI's `src/<package>/…`. */
const READ_FILES =
  /^(crewd\.json|langgraph\.json|pyproject\.toml|package\.json|requirements\.txt|src\/[^/]+\/(crew|main)\.py)$/;
const MAX_READ_BYTES = 1024 * 1024;

const SAFE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory', 'SymbolicLink', 'Link']);

export interface BundleListing {
  /** Every path in the bundle (files and folders, without a trailing slash), relative to its root. */
  paths: Set<string>;
  /** The contents of the project files detection reads. */
  files: Map<string, string>;
}

class UnsafeBundle extends Error {}

/** `./a/b/` → `a/b`; refuses absolute paths and `..`. */
function normalized(entryPath: string): string {
  if (entryPath.startsWith('/') || /^[A-Za-z]:/.test(entryPath)) {
    throw new UnsafeBundle(`absolute path ${JSON.stringify(entryPath)}`);
  }
  const parts = entryPath.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw new UnsafeBundle(`path with "..": ${JSON.stringify(entryPath)}`);
  return parts.join('/');
}

function checkLink(entry: ReadEntry, at: string): void {
  const target = entry.linkpath ?? '';
  if (target.startsWith('/')) throw new UnsafeBundle(`link ${JSON.stringify(at)} points to an absolute path`);
  // A symbolic link is relative to its folder, a hard link to the bundle's root.
  const from = entry.type === 'SymbolicLink' ? path.posix.dirname(at) : '.';
  const resolved = path.posix.normalize(path.posix.join(from, target));
  if (resolved === '..' || resolved.startsWith('../')) {
    throw new UnsafeBundle(`link ${JSON.stringify(at)} points outside the bundle`);
  }
}

/**
 * Reads a gzipped tar without writing anything: refuses what CONTRACTS §8 calls unsafe (absolute
 * paths, `..`, links leaving the folder, device files, too many entries, too many bytes) with a 400,
 * and returns the paths and the project files detection needs.
 */
export async function inspectBundle(bundle: Buffer): Promise<BundleListing> {
  const paths = new Set<string>();
  const files = new Map<string, string>();
  let entries = 0;
  let bytes = 0;
  let refusal: Error | null = null;
  const parser = new Parser({
    strict: true,
    onReadEntry: (entry) => {
      try {
        if (refusal) throw refusal;
        entries++;
        if (entries > BUNDLE_LIMITS.maxEntries) {
          throw new UnsafeBundle(`more than ${BUNDLE_LIMITS.maxEntries} entries`);
        }
        if (!SAFE_TYPES.has(entry.type)) throw new UnsafeBundle(`${entry.type} entry ${JSON.stringify(entry.path)}`);
        const at = normalized(entry.path);
        if (entry.type === 'SymbolicLink' || entry.type === 'Link') checkLink(entry, at);
        bytes += entry.size ?? 0;
        if (bytes > BUNDLE_LIMITS.maxUnpackedBytes) {
          throw new UnsafeBundle(`more than ${BUNDLE_LIMITS.maxUnpackedBytes / 1024 / 1024} MiB unpacked`);
        }
        if (at !== '') paths.add(at);
        if (entry.type === 'File' && READ_FILES.test(at) && (entry.size ?? 0) <= MAX_READ_BYTES) {
          const chunks: Buffer[] = [];
          entry.on('data', (chunk: Buffer) => chunks.push(chunk));
          entry.on('end', () => files.set(at, Buffer.concat(chunks).toString('utf8')));
          return;
        }
      } catch (error) {
        refusal = error as Error;
        parser.abort(refusal);
      }
      entry.resume();
    },
  });
  try {
    await pipeline(Readable.from([bundle]), parser);
  } catch (error) {
    throw refusalOf(refusal ?? (error as Error));
  }
  if (refusal) throw refusalOf(refusal);
  if (entries === 0) throw badRequest('The bundle is empty: send a gzipped tar of the project folder');
  return { paths, files };
}

function refusalOf(error: Error) {
  if (error instanceof UnsafeBundle) return badRequest(`The bundle was refused: ${error.message}`);
  return badRequest(`The bundle is not a gzipped tar (${error.message}): send the output of \`tar -czf\``);
}

/**
 * Unpacks an inspected bundle into `destination` (which must not exist yet): into a folder beside
 * it first, moved into place only when complete, so a failure leaves nothing behind.
 */
export async function unpackBundle(bundle: Buffer, destination: string): Promise<void> {
  const staging = `${destination}.unpacking-${process.pid}-${Date.now()}`;
  await mkdir(staging, { recursive: true });
  try {
    await pipeline(
      Readable.from([bundle]),
      extract({
        cwd: staging,
        strict: true,
        preserveOwner: false,
        // Inspected already; the filter keeps extraction safe even if that step were skipped.
        filter: (entryPath, entry) => {
          const type = (entry as ReadEntry).type;
          if (!SAFE_TYPES.has(type)) return false;
          normalized(entryPath);
          if (type === 'SymbolicLink' || type === 'Link') checkLink(entry as ReadEntry, normalized(entryPath));
          return true;
        },
      }),
    );
    await mkdir(path.dirname(destination), { recursive: true });
    await rename(staging, destination);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}
