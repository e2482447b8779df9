/** The local issuer's hand-built certificate is DER OpenSSL accepts, whatever its random serial. */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';

import { makeSelfSigned } from '../../self-signed-cert';

test('2,000 certificates in a row all parse: the serial is a minimal positive INTEGER, never 0x00-padded', () => {
  // One serial in 256 drew a first byte of 0 before a byte under 0x80 (illegal padding); 2,000
  // draws would all but certainly include one.
  for (let i = 0; i < 2000; i++) {
    const { cert } = makeSelfSigned();
    const parsed = new X509Certificate(cert);
    assert.match(parsed.serialNumber, /^[0-9A-F]+$/);
    assert.ok(parsed.subjectAltName?.includes('IP Address:127.0.0.1'));
  }
});
