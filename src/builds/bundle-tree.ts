import { setImmediate as yieldToLoop } from 'node:timers/promises';

/** CONTRACTS §8: a bundle past these is refused. */
export const BUNDLE_LIMITS = {
  maxEntries: 20_000,
  maxUnpackedBytes: 512 * 1024 * 1024,
  /** The tar itself once inflated: the files plus room for the archive's own headers and padding. */
  maxInflatedBytes: 640 * 1024 * 1024,
  /** An entry's name or a link's target (the kernel's PATH_MAX). */
  maxPathBytes: 4096,
};

/** A bundle that breaks a rule of CONTRACTS §8: the message names the entry and why. */
export class UnsafeBundle extends Error {}

interface Dir {
  kind: 'dir';
  path: string;
  parent: Dir | null;
  children: Map<string, Node>;
}
interface File {
  kind: 'file';
  path: string;
}
interface Link {
  kind: 'link';
  path: string;
  parent: Dir;
  target: string;
}
type Node = Dir | File | Link;

/** The tar entry fields the checks read (node-tar's ReadEntry has them). */
export interface EntryHeader {
  type: string;
  path: string;
  linkpath?: string | undefined;
  size?: number | undefined;
}

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);
const quoted = (text: string) => JSON.stringify(text);

/** `./a/b/` → `a/b`; refuses absolute paths, `..` and names past PATH_MAX. */
export function normalized(entryPath: string): string {
  if (Buffer.byteLength(entryPath) > BUNDLE_LIMITS.maxPathBytes) {
    throw new UnsafeBundle(
      `a path longer than ${BUNDLE_LIMITS.maxPathBytes} bytes: ${quoted(entryPath.slice(0, 80))}…`,
    );
  }
  if (entryPath.startsWith('/') || /^[A-Za-z]:/.test(entryPath)) {
    throw new UnsafeBundle(`absolute path ${quoted(entryPath)}`);
  }
  const parts = entryPath.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) throw new UnsafeBundle(`path with "..": ${quoted(entryPath)}`);
  return parts.join('/');
}

/**
 * The bundle's tree as its entries build it, in archive order, checked entry by entry: only files,
 * folders and links; no name twice, nothing under a link or a file; hard links only to a file
 * named before them. `finish` then follows every symbolic link the way the kernel will.
 */
export class BundleTree {
  readonly paths = new Set<string>();
  private readonly root: Dir = { kind: 'dir', path: '', parent: null, children: new Map() };
  private readonly links: Link[] = [];
  private entries = 0;
  private bytes = 0;

  /** Checks one entry and records it; answers its path relative to the root. Throws UnsafeBundle. */
  add(entry: EntryHeader): string {
    this.entries++;
    if (this.entries > BUNDLE_LIMITS.maxEntries)
      throw new UnsafeBundle(`more than ${BUNDLE_LIMITS.maxEntries} entries`);
    const at = normalized(entry.path);
    const isFile = FILE_TYPES.has(entry.type);
    if (!isFile && !['Directory', 'SymbolicLink', 'Link'].includes(entry.type)) {
      throw new UnsafeBundle(
        `${entry.type} entry ${quoted(at)}: only files, folders and links may be in a bundle (no devices, FIFOs or sockets)`,
      );
    }
    this.bytes += entry.size ?? 0;
    if (this.bytes > BUNDLE_LIMITS.maxUnpackedBytes) {
      throw new UnsafeBundle(`more than ${BUNDLE_LIMITS.maxUnpackedBytes / 1024 / 1024} MiB unpacked`);
    }
    if (at === '') {
      if (entry.type === 'Directory') return at;
      throw new UnsafeBundle(`a ${entry.type} entry names the bundle's root folder itself`);
    }
    const names = at.split('/');
    const name = names.pop() as string;
    const parent = this.folderFor(names, at);
    const existing = parent.children.get(name);
    if (existing && !(existing.kind === 'dir' && entry.type === 'Directory')) {
      throw new UnsafeBundle(`${quoted(at)} appears twice in the bundle`);
    }
    if (!existing) parent.children.set(name, this.nodeFor(entry, at, parent));
    this.paths.add(at);
    return at;
  }

  /** Follows every symbolic link; throws UnsafeBundle for one that leaves the folder, leads nowhere or to a link. */
  async finish(): Promise<void> {
    for (const [index, link] of this.links.entries()) {
      this.follow(link);
      // Many long links take a while: other requests go on meanwhile.
      if (index % 1000 === 999) await yieldToLoop();
    }
  }

  /** The folder that holds `names`, made as tar makes missing parents; refuses parents that are not folders. */
  private folderFor(names: string[], at: string): Dir {
    let folder = this.root;
    for (const name of names) {
      let child = folder.children.get(name);
      if (!child) {
        const path = folder.path === '' ? name : `${folder.path}/${name}`;
        child = { kind: 'dir', path, parent: folder, children: new Map() };
        folder.children.set(name, child);
        this.paths.add(path);
      }
      if (child.kind !== 'dir') {
        const what = child.kind === 'link' ? 'a link' : 'a file';
        throw new UnsafeBundle(`${quoted(at)} lies under ${quoted(child.path)}, which is ${what}, not a folder`);
      }
      folder = child;
    }
    return folder;
  }

  private nodeFor(entry: EntryHeader, at: string, parent: Dir): Node {
    if (entry.type === 'Directory') return { kind: 'dir', path: at, parent, children: new Map() };
    if (entry.type === 'Link') {
      this.checkHardLink(entry.linkpath ?? '', at);
      return { kind: 'file', path: at };
    }
    if (entry.type !== 'SymbolicLink') return { kind: 'file', path: at };
    const target = entry.linkpath ?? '';
    if (target === '') throw new UnsafeBundle(`symbolic link ${quoted(at)} has no target`);
    if (target.startsWith('/')) throw new UnsafeBundle(`link ${quoted(at)} points to an absolute path`);
    if (Buffer.byteLength(target) > BUNDLE_LIMITS.maxPathBytes) {
      throw new UnsafeBundle(`link ${quoted(at)}: its target is longer than ${BUNDLE_LIMITS.maxPathBytes} bytes`);
    }
    const link: Link = { kind: 'link', path: at, parent, target };
    this.links.push(link);
    return link;
  }

  /** A hard link names, from the root, a regular file that came before it, through folders only. */
  private checkHardLink(target: string, at: string): void {
    const outside = () => new UnsafeBundle(`hard link ${quoted(at)} points outside the bundle`);
    if (target.startsWith('/') || target.split('/').includes('..')) throw outside();
    let node: Node | undefined = this.root;
    for (const name of target.split('/').filter((part) => part !== '' && part !== '.')) {
      node = node.kind === 'dir' ? node.children.get(name) : undefined;
      if (!node) break;
    }
    if (node?.kind !== 'file') {
      throw new UnsafeBundle(`hard link ${quoted(at)} must name a regular file of the bundle that comes before it`);
    }
  }

  /**
   * Where a link leads, each step as the kernel takes it, from the real folder that holds it: `..`
   * goes up from there. A link that leads to or through another link is refused (the tar extractor
   * refuses it too), so no `..` ever climbs from where another link led.
   */
  private follow(link: Link): Dir | File {
    const parts = link.target.split('/').filter((part) => part !== '' && part !== '.');
    let at: Dir | File = link.parent;
    for (const part of parts) {
      if (at.kind !== 'dir') throw this.badLink(link, `it goes through ${quoted(at.path)}, a file, not a folder`);
      if (part === '..') {
        if (!at.parent) throw this.badLink(link, 'it leads outside the bundle');
        at = at.parent;
        continue;
      }
      const next: Node | undefined = at.children.get(part);
      const where = at.path === '' ? part : `${at.path}/${part}`;
      if (!next) throw this.badLink(link, `it leads to ${quoted(where)}, which is not in the bundle`);
      if (next.kind === 'link') {
        throw this.badLink(
          link,
          `it goes through the link ${quoted(where)}: a link may not lead to or through another`,
        );
      }
      at = next;
    }
    return at;
  }

  private badLink(link: Link, why: string): UnsafeBundle {
    return new UnsafeBundle(`symbolic link ${quoted(link.path)} -> ${quoted(link.target)}: ${why}`);
  }
}
