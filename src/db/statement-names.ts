import type pg from 'pg';

/** Uses of one SQL text before it gets a name: a one-off query stays unnamed. */
const USES_BEFORE_NAMING = 3;
/** Names given in all: each is a prepared statement on every connection, so they are few. */
const MAX_NAMES = 200;
/** Texts counted at once; the counts are forgotten past it, so one-off queries cannot pile up here. */
const MAX_COUNTED = 10_000;

type QueryFunction = (...args: unknown[]) => unknown;

/**
 * Names the statements this process sends again and again (a run's insert and end, a key's
 * lookup), so that each connection of the pool parses and plans them once, as prepared
 * statements, instead of on every call: that is most of what PostgreSQL spends on them. Kysely
 * sends `query(text, values)`; a text with parameters gets its name on its third use, and only
 * the first MAX_NAMES texts ever get one, so queries built anew each time (a table's filters)
 * cannot pile up statements on the server.
 */
export function nameRepeatedStatements(pool: pg.Pool): void {
  const uses = new Map<string, number>();
  const names = new Map<string, string>();

  function nameOf(text: string): string | undefined {
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
  }

  pool.on('connect', (client) => {
    const query = client.query.bind(client) as QueryFunction;
    (client as unknown as { query: QueryFunction }).query = (config: unknown, values: unknown, callback: unknown) => {
      const named = typeof config === 'string' && Array.isArray(values) && values.length > 0;
      const name = named ? nameOf(config) : undefined;
      if (name === undefined) return query(config, values, callback);
      return query({ name, text: config, values }, callback);
    };
  });
}
