import type { Db } from '../db/types.js';
import { organizationsUpTo } from '../run-record/repository.js';

/**
 * An organization's share of an instance's slots (runs, event streams, builds, webhook deliveries): the setting
 * where there is one (MAX_RUNS_PER_ORGANIZATION…), else every slot while the installation has one organization and
 * three quarters of them (at least 1) once it has several (CONTRACTS §12), so that one organization whose work is
 * slow cannot keep another's waiting.
 */
export function organizationShare(slots: number, several: boolean, setting = 0): number {
  if (setting > 0) return setting;
  return several ? Math.max(1, slots - Math.ceil(slots / 4)) : slots;
}

/** How long the answer "the installation has one organization" is taken as current. */
const DEFAULT_RECHECK_MS = 1_000;

/**
 * Whether the installation has several organizations, as the shares ask it. Organizations are never deleted, so
 * once there are several there stay several; until then the database is asked at most once per `recheckMs`.
 */
export function watchOrganizations(db: Db, recheckMs = DEFAULT_RECHECK_MS) {
  const state = { several: false, checkedAt: 0, asking: null as Promise<boolean> | null };

  function ask(): Promise<boolean> {
    if (state.several || state.asking || Date.now() - state.checkedAt < recheckMs) {
      return state.asking ?? Promise.resolve(state.several);
    }
    state.checkedAt = Date.now();
    const asking = organizationsUpTo(db, 2).then(
      (count) => {
        if (count > 1) state.several = true;
        return state.several;
      },
      () => state.several,
    );
    state.asking = asking.finally(() => {
      state.asking = null;
    });
    return state.asking;
  }

  return {
    /** What is known now; a stale "one" is asked again in the background. */
    get several(): boolean {
      void ask();
      return state.several;
    },
    /** The answer, asked again first when the last "one" is stale. */
    current: ask,
    /** Work of two organizations seen on this instance: they are several, whatever the last count said. */
    sawOrganizations(orgIds: Iterable<string>): void {
      if (!state.several && new Set(orgIds).size > 1) state.several = true;
    },
    /** An organization was made here: there are several from now on. */
    organizationCreated(): void {
      state.several = true;
    },
  };
}

export type OrganizationsWatch = ReturnType<typeof watchOrganizations>;
