import { mkdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { x as extract, Parser, type ReadEntry } from 'tar';
import { badRequest } from '../errors.js';
import { BUNDLE_LIMITS, BundleTree, UnsafeBundle } from './bundle-tree.js';
import { inflating } from './inflate.js';

/** Files read at inspection, for project detection: the root's project files and CrewAI's `src/<package>/…`. */
const READ_FILES =
  /^(crewd\.json|langgraph\.json|pyproject\.toml|package\.json|requirements\.txt|src\/[^/]+\/(crew|main)\.py)$/;
const MAX_READ_BYTES = 1024 * 1024;

/** The tar parser inflates nothing itself: the bundle reaches it inflated, a slice at a time (inflate.ts). */
const PARSER_OPTIONS = { strict: true, zstd: false, brotli: false } as const;

export interface BundleListing {
  /** Every path in the bundle (files and folders, without a trailing slash), relative to its root. */
  paths: Set<string>;
  /** The contents of the project files detection reads. */
  files: Map<string, string>;
}

/** Setuid, setgid, sticky and others' write bits go; the owner may always read and write (and enter folders). */
function safeMode(entry: ReadEntry): void {
  const base = entry.type === 'Directory' ? 0o700 : 0o600;
  entry.mode = ((entry.mode ?? base) & 0o755) | base;
}

/**
 * Reads the bundle through `parser` (built with `check`, which records each entry in `tree`),
 * then follows the links: the refusal is a 400 naming the entry and why.
 */
async function readThrough(
  bundle: Buffer,
  tree: BundleTree,
  makeParser: (check: (entry: ReadEntry) => string | null) => NodeJS.WritableStream,
): Promise<void> {
  let refusal: Error | null = null;
  let parser: (NodeJS.WritableStream & { abort(error: Error): void }) | null = null;
  /** The entry's path when it may be read or written, else null (and the parse ends). */
  const check = (entry: ReadEntry): string | null => {
    if (refusal) return null;
    try {
      return tree.add(entry);
    } catch (error) {
      refusal = error as Error;
      parser?.abort(refusal);
      return null;
    }
  };
  parser = makeParser(check) as NodeJS.WritableStream & { abort(error: Error): void };
  const [source, gunzip, limit] = inflating(bundle, BUNDLE_LIMITS.maxInflatedBytes);
  parser.on('eof', () => limit.archiveEnded());
  try {
    await pipeline(source, gunzip, limit, parser);
    if (!refusal) await tree.finish();
  } catch (error) {
    throw refusalOf(refusal ?? (error as Error));
  }
  if (refusal) throw refusalOf(refusal);
  if (tree.paths.size === 0) throw badRequest('The bundle is empty: send a gzipped tar of the project folder');
}

function refusalOf(error: Error) {
  if (error instanceof UnsafeBundle) return badRequest(`The bundle was refused: ${error.message}`);
  return badRequest(`The bundle is not a gzipped tar (${error.message}): send the output of \`tar -czf\``);
}

/**
 * Reads a gzipped tar without writing anything: refuses what CONTRACTS §8 calls unsafe (absolute
 * paths, `..`, links that leave the folder or lead nowhere, devices and FIFOs, too many entries, too
 * many bytes) with a 400, and returns the paths and the project files detection needs.
 */
export async function inspectBundle(bundle: Buffer): Promise<BundleListing> {
  const tree = new BundleTree();
  const files = new Map<string, string>();
  await readThrough(
    bundle,
    tree,
    (check) =>
      new Parser({
        ...PARSER_OPTIONS,
        onReadEntry: (entry) => {
          const at = check(entry);
          if (at !== null && entry.type === 'File' && READ_FILES.test(at) && (entry.size ?? 0) <= MAX_READ_BYTES) {
            const chunks: Buffer[] = [];
            entry.on('data', (chunk: Buffer) => chunks.push(chunk));
            entry.on('end', () => files.set(at, Buffer.concat(chunks).toString('utf8')));
            return;
          }
          entry.resume();
        },
      }),
  );
  return { paths: tree.paths, files };
}

/**
 * Unpacks a bundle into `destination` (which must not exist yet), with the checks of inspectBundle
 * on each entry before it is written: into a folder beside it first, moved into place only when
 * complete and every link is followed, so a failure or a refusal leaves nothing behind.
 */
export async function unpackBundle(bundle: Buffer, destination: string): Promise<void> {
  const staging = `${destination}.unpacking-${process.pid}-${Date.now()}`;
  await mkdir(staging, { recursive: true });
  try {
    await readThrough(bundle, new BundleTree(), (check) =>
      extract({
        ...PARSER_OPTIONS,
        cwd: staging,
        preserveOwner: false,
        filter: (_path, entry) => {
          if (check(entry as ReadEntry) === null) return false;
          safeMode(entry as ReadEntry);
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
