import { type Compilable, CompiledQuery } from 'kysely';
import type { Db } from './types.js';

/** What a marked value is compiled as: no value a caller stores starts with a NUL character (json-body.ts). */
const MARK = '\u0000crewd-value:';

/** Where a compiled statement's parameter comes from: a value the caller names, or a constant of the statement. */
type Source<V> = { value: keyof V } | { constant: unknown };

/**
 * A statement of one shape whatever its values, built and compiled by Kysely once: later calls put their values in
 * the compiled text's parameters. Building and compiling a statement of several parts costs the service more CPU
 * than sending it (issue 35's profile of a run's insert). `build` must use each of `values` as a parameter as it is
 * (a value to transform, JSON.stringify say, is transformed by the caller) and must not branch on them.
 */
export function compiledOnce<V extends Record<string, unknown>, R>(build: (db: Db, values: V) => Compilable<R>) {
  let compiled: { sql: string; sources: Source<V>[] } | null = null;
  return async (db: Db, values: V): Promise<R[]> => {
    if (!compiled) {
      const marked = Object.fromEntries(Object.keys(values).map((name) => [name, `${MARK}${name}`])) as V;
      const query = build(db, marked).compile();
      const sources = query.parameters.map(
        (parameter): Source<V> =>
          typeof parameter === 'string' && parameter.startsWith(MARK)
            ? { value: parameter.slice(MARK.length) }
            : { constant: parameter },
      );
      compiled = { sql: query.sql, sources };
    }
    const parameters = compiled.sources.map((source) => ('value' in source ? values[source.value] : source.constant));
    return (await db.executeQuery<R>(CompiledQuery.raw(compiled.sql, parameters))).rows;
  };
}
