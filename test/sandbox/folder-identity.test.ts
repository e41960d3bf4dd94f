import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { folderIdentity } from '../../src/sandbox/bubblewrap.js';

describe('folderIdentity (what a spare sandbox was made with)', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync('/var/tmp/crewd-identity-');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('tells a folder removed and made again from the one before, even when it gets the same inode back', () => {
    const folder = path.join(root, 'ver_1');
    const identities = new Set<string>();
    // Removing and making a folder again often hands it the inode it had: the identity must still change each time.
    for (let i = 0; i < 20; i += 1) {
      mkdirSync(folder);
      identities.add(folderIdentity(folder));
      rmSync(folder, { recursive: true });
      mkdirSync(folder);
      identities.add(folderIdentity(folder));
      rmSync(folder, { recursive: true });
    }
    expect(identities.size).toBe(40);
    expect(folderIdentity(folder)).toBe('gone');
  });

  it('stays the same for a folder left alone', () => {
    const folder = path.join(root, 'ver_2');
    mkdirSync(folder);
    expect(folderIdentity(folder)).toBe(folderIdentity(folder));
  });
});
