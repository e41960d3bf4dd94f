import { Cron } from 'croner';

/**
 * Cron expressions through croner: 5 fields (minute first) or 6 (seconds first), in an IANA
 * time zone; croner's nicknames (`@hourly`, `@daily`, …) too. Throws with a reason a person can
 * act on when the expression or the zone is not valid.
 */
function compile(schedule: string, timezone: string): Cron {
  return new Cron(schedule, { paused: true, timezone, mode: '5-or-6-parts' });
}

/** Why the expression is not a cron schedule, or null when it is one. */
export function scheduleProblem(schedule: string): string | null {
  try {
    compile(schedule, 'UTC');
    return null;
  } catch (error) {
    const reason = error instanceof Error ? error.message.replace(/^CronPattern: /, '') : String(error);
    return `not a cron expression of 5 fields, or 6 with seconds first (${reason})`;
  }
}

/** Whether the runtime knows the IANA time zone (e.g. `Europe/Paris`, `UTC`). */
export function isTimeZone(timezone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The shortest time between two of the schedule's next `count` due times after `after`, in
 * seconds; null when it falls due fewer than twice.
 */
export function shortestGapSeconds(schedule: string, timezone: string, after: Date, count: number): number | null {
  const times = compile(schedule, timezone).nextRuns(count, after);
  let shortest: number | null = null;
  for (let i = 1; i < times.length; i++) {
    const gap = ((times[i] as Date).getTime() - (times[i - 1] as Date).getTime()) / 1000;
    if (shortest === null || gap < shortest) shortest = gap;
  }
  return shortest;
}

/** The first time of the schedule strictly after `after`; null when it never comes. */
export function nextTime(schedule: string, timezone: string, after: Date): Date | null {
  return compile(schedule, timezone).nextRun(after);
}
