import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { connectPglite, type DatabaseHandle } from '../../src/db/connect.js';
import { emptyClusterCopy } from '../../src/db/pglite-cluster.js';

const root = mkdtempSync(path.join(tmpdir(), 'crewd-cluster-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const systemIdentifier = async (handle: DatabaseHandle) =>
  String(
    (await sql<{ id: string }>`select system_identifier::text as id from pg_control_system()`.execute(handle.db))
      .rows[0]?.id,
  );

describe('a new embedded database', () => {
  it('starts from the empty cluster copied once, and keeps what is written in it', async () => {
    const first = await connectPglite({ dataDir: path.join(root, 'one', 'db') });
    const firstId = await systemIdentifier(first);
    await first.close();
    // The first new database on this installation made the copy, or an earlier one did.
    expect(existsSync(emptyClusterCopy().file)).toBe(true);

    const second = await connectPglite({ dataDir: path.join(root, 'two', 'db') });
    // initdb gives every cluster an identifier of its own: the same one means the copy was loaded.
    expect(await systemIdentifier(second)).toBe(firstId);
    await sql`create table kept (x int)`.execute(second.db);
    await sql`insert into kept values (7)`.execute(second.db);
    await second.close();

    const reopened = await connectPglite({ dataDir: path.join(root, 'two', 'db') });
    const rows = await sql<{ x: number }>`select x from kept`.execute(reopened.db);
    expect(rows.rows).toEqual([{ x: 7 }]);
    await reopened.close();
  });

  it('is saved whole by the first new database and loads as the same cluster', async () => {
    const copy = emptyClusterCopy(path.join(root, 'cache', 'empty-cluster.tar.gz'));
    expect(copy.load()).toBeUndefined();
    const made = await connectPglite({});
    if (!made.pglite) throw new Error('expected an embedded database');
    await copy.save(made.pglite);
    const madeId = await systemIdentifier(made);
    await made.close();
    const loaded = await connectPglite({ loadDataDir: copy.load() });
    expect(await systemIdentifier(loaded)).toBe(madeId);
    await loaded.close();
  });
});
