/**
 * The SSRF guard: a callback's host is resolved before each delivery, and the request connects to
 * the address that was checked (so a second, rebinding answer cannot slip in). Private, loopback,
 * link-local (the cloud metadata endpoint 169.254.169.254 among them), Azure's platform endpoint
 * 168.63.129.16, carrier-grade NAT, multicast, documentation and reserved addresses are refused
 * unless the URL's origin is allowlisted; so are the IPv6 forms that reach IPv4 or the local network
 * (IPv4-compatible `::/96`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo,
 * discard `100::/64`), and an IPv4-mapped or -translated address is judged by its IPv4 address.
 */
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

import { isLoopbackHost } from '../config/event-settings';

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['168.63.129.16', 32],
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
] as const)
  blocked.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 96],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  blocked.addSubnet(net, bits, 'ipv6');

/**
 * Never reachable, allowlisted or not: link-local (the metadata endpoint 169.254.169.254), Azure's
 * platform endpoint, `0.0.0.0/8`, and loopback unless the URL names loopback itself (`localhost`,
 * `127.x`, `::1`: a local receiver), so an exact entry opens private networks, never the
 * instance's own credentials or a name that resolves to the instance itself.
 */
const never = new BlockList();
never.addSubnet('0.0.0.0', 8, 'ipv4');
never.addSubnet('169.254.0.0', 16, 'ipv4');
never.addSubnet('168.63.129.16', 32, 'ipv4');
never.addSubnet('fe80::', 10, 'ipv6');
const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

function inList(list: BlockList, address: string): boolean {
  const family = isIP(address);
  if (family === 4) return list.check(address, 'ipv4');
  const v4 = mappedIPv4(address);
  return v4 !== undefined ? list.check(v4, 'ipv4') : list.check(address, 'ipv6');
}

/** True for an address not even an exact allowlist entry may reach (see `never`), as `host` named it. */
function isNeverReachable(address: string, host: string): boolean {
  return inList(never, address) || (inList(loopback, address) && !isLoopbackHost(host));
}

/** True for an address no callback may reach without an allowlist entry. */
export function isBlockedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family !== 6) return true;
  const v4 = mappedIPv4(address);
  if (v4 !== undefined) return blocked.check(v4, 'ipv4');
  return blocked.check(address, 'ipv6');
}

/**
 * The IPv4 address inside an IPv4-mapped (`::ffff:0:0/96`) or -translated (`::ffff:0:0:0/96`)
 * address, in either notation (`::ffff:127.0.0.1` or `::ffff:7f00:1`, as URL parsing writes it):
 * a connection to one reaches that IPv4 address.
 */
export function mappedIPv4(address: string): string | undefined {
  const groups = ipv6Groups(address);
  if (!groups) return undefined;
  const head = groups.slice(0, 5).every((g) => g === 0);
  const mapped = head && groups[5] === 0xffff;
  const translated = groups.slice(0, 4).every((g) => g === 0) && groups[4] === 0xffff && groups[5] === 0;
  if (!mapped && !translated) return undefined;
  const [hi = 0, lo = 0] = groups.slice(6);
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff].join('.');
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted quad included). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const quad = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [left = '', right] = text.split('::');
  const part = (s: string): number[] => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const l = part(left);
  const r = right === undefined ? [] : part(right);
  const groups = right === undefined ? l : [...l, ...Array<number>(8 - l.length - r.length).fill(0), ...r];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
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

const systemLookup: HostLookup = async (host) =>
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
  const never = answers.find((a) => isNeverReachable(a.address, host));
  if (never)
    throw new RefusedAddressError(
      `${host} resolves to ${never.address}, a link-local, platform or loopback address (refused even when allowlisted)`,
    );
  if (!allowPrivate) {
    const bad = answers.find((a) => isBlockedAddress(a.address));
    if (bad)
      throw new RefusedAddressError(
        `${host} resolves to ${bad.address}, a private, loopback or link-local address (not allowlisted)`,
      );
  }
  return first;
}
