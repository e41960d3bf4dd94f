import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

/** Uses of one SQL text before it gets a name: a one-off query stays unnamed. */
const USES_BEFORE_NAMING = 3;
/** Names given in all: each is a prepared statement on every connection, so they are few. */
const MAX_NAMES = 200;
/** Texts counted at once; the counts are forgotten past it, so one-off queries cannot pile up here. */
const MAX_COUNTED = 10_000;

/** The commands Kysely reads an affected-row count for; any other is answered as a SELECT, which it counts as none. */
const COUNTED_COMMANDS = ['INSERT', 'UPDATE', 'DELETE', 'MERGE'] as const;
const isCounted = (command: string): command is (typeof COUNTED_COMMANDS)[number] =>
  (COUNTED_COMMANDS as readonly string[]).includes(command);

/** Names a text with parameters on its third use; only the first MAX_NAMES texts ever get one. */
function statementNamer(): (text: string) => string | undefined {
  const uses = new Map<string, number>();
  const names = new Map<string, string>();
  return (text) => {
    const name = names.get(text);
    if (name !== undefined || names.size >= MAX_NAMES) return name;
    const count = (uses.get(text) ?? 0) + 1;
    if (count < USES_BEFORE_NAMING) {
      if (uses.size >= MAX_COUNTED) uses.clear();
      uses.set(text, count);
      return undefined;
    }
    uses.delete(text);
    const named = `crewd_${names.size + 1}`;
    names.set(text, named);
    return named;
  };
}

/** One pooled connection as Kysely sees it: each query sent as pg's query config, named when it repeats. */
class NamingClient implements PostgresPoolClient {
  constructor(
    private readonly client: pg.PoolClient,
    private readonly nameOf: ((text: string) => string | undefined) | null,
  ) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query(cursor: unknown): never;
  query<R>(sql: unknown, parameters?: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    // The dialect is given no cursor class, so Kysely never sends one (it refuses .stream() first).
    if (typeof sql !== 'string') throw new Error('crewd streams no query results from PostgreSQL');
    return this.send<R>(sql, [...(parameters ?? [])]);
  }

  private async send<R>(text: string, values: unknown[]): Promise<PostgresQueryResult<R>> {
    const name = this.nameOf && values.length > 0 ? this.nameOf(text) : undefined;
    const result = await this.client.query(name === undefined ? { text, values } : { name, text, values });
    const command = isCounted(result.command) ? result.command : 'SELECT';
    return { command, rowCount: result.rowCount ?? 0, rows: result.rows };
  }

  release(): void {
    this.client.release();
  }
}

/**
 * The pool Kysely is given on PostgreSQL. With `prepare`, the statements this process sends again
 * and again (a run's insert and end, a key's lookup) go as pg's named query config, so each
 * connection of the pool parses and plans them once, as prepared statements, instead of on every
 * call: that is most of what PostgreSQL spends on them. A text with parameters gets its name on
 * its third use, and only the first MAX_NAMES texts ever get one, so queries built anew each time
 * (a table's filters) cannot pile up statements on the server.
 */
export function kyselyPool(pool: pg.Pool, prepare: boolean): PostgresPool {
  const nameOf = prepare ? statementNamer() : null;
  const clients = new WeakMap<pg.PoolClient, NamingClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapped = clients.get(client);
      if (!wrapped) {
        wrapped = new NamingClient(client, nameOf);
        clients.set(client, wrapped);
      }
      return wrapped;
    },
    end: () => pool.end(),
  };
}
