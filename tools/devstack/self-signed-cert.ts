/**
 * A self-signed TLS certificate for 127.0.0.1 and localhost (ECDSA P-256, a year), written as DER by
 * hand: the local issuer must speak https, because MSAL refuses an authority that does not
 * (`authority_uri_insecure`), and Node can sign but not build an X.509 certificate. Nobody trusts
 * it: a browser is told to accept it (the tests), or a person accepts it once.
 */
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';

export interface SelfSigned {
  /** PEM. */
  key: string;
  /** PEM. */
  cert: string;
  /** Epoch ms after which it is made again. */
  notAfter: number;
}

const VALID_MS = 365 * 24 * 3600 * 1000;

function der(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const n = body.length;
  const len = n < 0x80 ? Buffer.from([n]) : n < 0x100 ? Buffer.from([0x81, n]) : Buffer.from([0x82, n >> 8, n & 0xff]);
  return Buffer.concat([Buffer.from([tag]), len, body]);
}

const seq = (...parts: Buffer[]): Buffer => der(0x30, ...parts);
const oid = (hex: string): Buffer => der(0x06, Buffer.from(hex, 'hex'));
const utf8 = (s: string): Buffer => der(0x0c, Buffer.from(s, 'utf8'));

function utcTime(ms: number): Buffer {
  const iso = new Date(ms).toISOString(); // 2026-11-25T21:10:00.000Z → 261125211000Z
  return der(
    0x17,
    Buffer.from(
      `${iso.slice(2, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`,
    ),
  );
}

const ECDSA_SHA256 = seq(oid('2a8648ce3d040302'));
const NAME = seq(der(0x31, seq(oid('550403'), utf8('pushdrain local issuer'))));

export function makeSelfSigned(now = Date.now()): SelfSigned {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const serial = randomBytes(16);
  // A positive INTEGER in its shortest form: the top bit clear (not negative) and the first byte
  // not zero (DER forbids a leading 0x00 before a byte under 0x80; OpenSSL refuses the certificate).
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x40;
  const notAfter = now + VALID_MS;
  const altNames = seq(der(0x87, Buffer.from([127, 0, 0, 1])), der(0x82, Buffer.from('localhost', 'ascii')));
  const extensions = der(
    0xa3,
    seq(
      seq(oid('551d11'), der(0x04, altNames)), // subjectAltName: IP 127.0.0.1, DNS localhost
      seq(oid('551d13'), der(0x04, seq())), // basicConstraints: not a CA
    ),
  );
  const tbs = seq(
    der(0xa0, der(0x02, Buffer.from([2]))), // v3
    der(0x02, serial),
    ECDSA_SHA256,
    NAME,
    seq(utcTime(now - 3600_000), utcTime(notAfter)),
    NAME,
    publicKey.export({ type: 'spki', format: 'der' }),
    extensions,
  );
  const signature = sign('sha256', tbs, privateKey);
  const cert = seq(tbs, ECDSA_SHA256, der(0x03, Buffer.from([0]), signature));
  const pem = (label: string, body: Buffer): string =>
    `-----BEGIN ${label}-----\n${body
      .toString('base64')
      .replace(/(.{64})/g, '$1\n')
      .replace(/\n$/, '')}\n-----END ${label}-----\n`;
  return {
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    cert: pem('CERTIFICATE', cert),
    notAfter,
  };
}
