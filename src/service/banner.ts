/** The lines printed once the service listens: where its API, console and API reference are. */
export function startBanner(address: { host: string; port: number }): string {
  const host = address.host === '0.0.0.0' || address.host === '::' ? 'localhost' : address.host;
  const base = `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
  return [
    '',
    `  crewd is listening on ${base}`,
    `    console        ${base}/console/`,
    `    API reference  ${base}/docs`,
    '',
    '',
  ].join('\n');
}
