/**
 * The SSRF guard: a callback's host is resolved before each delivery, and the request connects to
 * the address that was checked (so a second, rebinding answer cannot slip in). Private, loopback,
 * link-local (the cloud metadata endpoint 169.254.169.254 among them), carrier-grade NAT,
 * multicast and reserved addresses are refused unless the URL's origin is allowlisted.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const)
  blocked.addSubnet(net, bits, 'ipv6');

/** True for an address no callback may reach without an allowlist entry. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped?.[1]) return blocked.check(mapped[1], 'ipv4');
  return blocked.check(address, 'ipv6');
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Thrown when the guard refuses a host; its message names the host, never a URL's query. */
export class RefusedAddressError extends Error {
  override readonly name = 'RefusedAddressError';
}

/** Every address a host name resolves to. */
export type HostLookup = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemLookup: HostLookup = async (host) =>
  (await lookup(host, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

/**
 * The address to connect to for `hostname`: its first answer, every answer checked unless
 * `allowPrivate`. A refusal is a RefusedAddressError.
 */
export async function resolveChecked(
  hostname: string,
  allowPrivate: boolean,
  resolve: HostLookup = systemLookup,
): Promise<ResolvedAddress> {
  const literal = checkedLiteral(hostname, allowPrivate);
  if (literal) return literal;
  const host = bare(hostname);
  return checked(host, await resolve(host), allowPrivate);
}

/**
 * `hostname` as the address to connect to when it is an IP literal (checked as resolveChecked
 * would, without a lookup or a turn of the event loop); undefined for a name, which must resolve.
 */
export function checkedLiteral(hostname: string, allowPrivate: boolean): ResolvedAddress | undefined {
  const host = bare(hostname);
  const family = isIP(host);
  return family === 4 || family === 6 ? checked(host, [{ address: host, family }], allowPrivate) : undefined;
}

function bare(hostname: string): string {
  return hostname.replace(/^\[|\]$/g, '');
}

function checked(host: string, answers: readonly ResolvedAddress[], allowPrivate: boolean): ResolvedAddress {
  const first = answers[0];
  if (!first) throw new RefusedAddressError(`${host} has no address`);
  if (!allowPrivate) {
    const bad = answers.find((a) => isBlockedAddress(a.address));
    if (bad)
      throw new RefusedAddressError(
        `${host} resolves to ${bad.address}, a private, loopback or link-local address (not allowlisted)`,
      );
  }
  return first;
}
