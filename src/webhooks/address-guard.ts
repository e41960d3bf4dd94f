import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { buildConnector } from 'undici';

/** Loopback, private, shared, link-local (cloud metadata), documentation, multicast and reserved IPv4. */
const IPV4_RANGES: Array<[string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
];

/** The IPv6 counterparts; forms that embed an IPv4 address are judged by that address instead. */
const IPV6_RANGES: Array<[string, number]> = [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:2::', 48],
  ['2001:10::', 28],
  ['2001:20::', 28],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
];

const blockedV4 = new BlockList();
for (const [network, prefix] of IPV4_RANGES) blockedV4.addSubnet(network, prefix, 'ipv4');
const blockedV6 = new BlockList();
for (const [network, prefix] of IPV6_RANGES) blockedV6.addSubnet(network, prefix, 'ipv6');

/** The eight 16-bit groups of an IPv6 address (zone id dropped, dotted tail folded in). */
function ipv6Groups(address: string): number[] {
  let text = address.split('%')[0] ?? '';
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a = 0, b = 0, c = 0, d = 0] = tail.split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const front = parse(head);
  const back = rest === undefined ? [] : parse(rest);
  return [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
}

const dotted = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;

/** The IPv4 address an IPv6 address stands for: mapped, compatible, SIIT, NAT64 and 6to4 forms. */
function embeddedIpv4(address: string): string | null {
  const g = ipv6Groups(address);
  const zero = (from: number, to: number) => g.slice(from, to).every((group) => group === 0);
  const [g0 = 0, g1 = 0, g2 = 0, , g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  if (zero(0, 5) && (g5 === 0xffff || g5 === 0)) return dotted(g6, g7);
  if (zero(0, 4) && g4 === 0xffff && g5 === 0) return dotted(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && zero(2, 6)) return dotted(g6, g7);
  if (g0 === 0x2002) return dotted(g1, g2);
  return null;
}

/** True for an address an outgoing webhook must not reach (anything that is not a public unicast IP). */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blockedV4.check(address, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(address);
    if (v4 !== null) return blockedV4.check(v4, 'ipv4');
    return blockedV6.check(address.split('%')[0] ?? address, 'ipv6');
  }
  return true;
}

/** Said with every refusal, so an operator whose receivers live on a private network knows the way out. */
const HOW_TO_ALLOW = 'set WEBHOOK_ALLOW_PRIVATE_URLS=true to allow them';

export class ForbiddenAddressError extends Error {
  readonly code = 'ERR_WEBHOOK_ADDRESS_FORBIDDEN';
  constructor(hostname: string, address?: string) {
    const where = address && address !== hostname ? `${hostname} (${address})` : hostname;
    super(
      `Refused to connect to ${where}: loopback, private, link-local and metadata addresses are not allowed (${HOW_TO_ALLOW})`,
    );
    this.name = 'ForbiddenAddressError';
  }
}

/** `localhost`, `localhost.` and any `*.localhost` name always mean this machine (RFC 6761), whatever DNS says. */
function isLocalhostName(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/** For the URL check at create/update time: a literal IP or localhost name that is forbidden, else null. */
export function forbiddenLiteralHost(url: URL): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) !== 0) return isForbiddenAddress(host) ? host : null;
  return isLocalhostName(host) ? host : null;
}

/** The 400 message for a webhook URL whose host is refused at create/update time, or null when it may be used. */
export function forbiddenUrlMessage(url: URL): string | null {
  const host = forbiddenLiteralHost(url);
  if (host === null) return null;
  return `url: ${host} is a loopback, private, link-local or metadata address; these are not allowed (${HOW_TO_ALLOW})`;
}

/** Resolves a host to an address it is safe to connect to, or throws ForbiddenAddressError. */
export async function resolveAllowedAddress(hostname: string): Promise<string> {
  if (isIP(hostname) !== 0) {
    if (isForbiddenAddress(hostname)) throw new ForbiddenAddressError(hostname);
    return hostname;
  }
  if (isLocalhostName(hostname)) throw new ForbiddenAddressError(hostname);
  const addresses = await lookup(hostname, { all: true, verbatim: true });
  const allowed = addresses.find((entry) => !isForbiddenAddress(entry.address));
  if (!allowed) throw new ForbiddenAddressError(hostname, addresses[0]?.address);
  return allowed.address;
}

/**
 * An undici connector that checks the address at connect time, after DNS, so a name that
 * resolves (or re-resolves) to an internal address is refused. TLS still verifies the name.
 */
export function guardedConnector(options: { allowPrivate: boolean; timeoutMs: number }): buildConnector.connector {
  const connect = buildConnector({ timeout: options.timeoutMs });
  if (options.allowPrivate) return connect;
  return (connectOptions, callback) => {
    resolveAllowedAddress(connectOptions.hostname).then(
      (address) => connect({ ...connectOptions, hostname: address }, callback),
      (error: Error) => callback(error, null),
    );
  };
}
