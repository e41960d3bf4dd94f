/** Load helpers of the benches: one action timed, and requests per second from concurrent clients. */

export async function timed(action: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await action();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** Requests per second from `clients` loops running for `seconds`. */
export async function throughput(action: () => Promise<unknown>, clients: number, seconds: number): Promise<number> {
  let done = 0;
  const started = Date.now();
  const deadline = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < deadline) {
        await action();
        done += 1;
      }
    }),
  );
  return done / ((Date.now() - started) / 1000);
}

/**
 * Each side's `seconds` of load is taken in alternating slices, so a change in the machine's
 * other load during the run weighs on both sides alike; returns each side's requests per second.
 */
export async function alternatingThroughput(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
  clients: number,
  seconds: number,
  slices: number,
): Promise<[number, number]> {
  const rates: [number[], number[]] = [[], []];
  for (let i = 0; i < slices; i++) {
    rates[0].push(await throughput(a, clients, seconds / slices));
    rates[1].push(await throughput(b, clients, seconds / slices));
  }
  const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  return [mean(rates[0]), mean(rates[1])];
}
