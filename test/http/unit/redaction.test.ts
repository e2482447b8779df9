import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { redactError, redactSecrets } from '../../../shared/redaction';

const S = 'S3cr3tValue';

describe('redaction: one rule set for logs, answers and the banner', () => {
  test('every credential form is masked, its name kept', () => {
    const cases: [string, string][] = [
      [`DefaultEndpointsProtocol=https;AccountName=a;AccountKey=${S};`, 'AccountKey=***;'],
      [`Endpoint=sb://n/;SharedAccessKeyName=k;SharedAccessKey=${S}`, 'SharedAccessKey=***'],
      [`BlobEndpoint=https://a/;SharedAccessSignature=sv=1&sig=${S}`, 'SharedAccessSignature=***'],
      [`Authorization: SharedAccessSignature sr=x&sig=${S}&se=1`, 'SharedAccessSignature ***'],
      [`GET https://a/c?sv=1&sig=${S}&se=2`, '&sig=***&se=2'],
      [`GET https://a/c?sv=1&sig%3D${S}`, '&sig%3D***'],
      [`POST https://h/cb?code=${S}&x=1`, 'code=***&x=1'],
      [`token=${S} refused`, 'token=*** refused'],
      [`secret whsec_${S}AAAA`, 'whsec_***'],
    ];
    for (const [text, masked] of cases) {
      const out = redactSecrets(text);
      assert.ok(!out.includes(S), `${text} → ${out}`);
      assert.ok(out.includes(masked), `${text} → ${out}, expected ${masked}`);
    }
  });
  test('text without a credential is kept as it is', () => {
    const text = 'connect ECONNREFUSED 127.0.0.1:10000; signature mismatch; tokens left: 3';
    assert.equal(redactSecrets(text), text);
  });
  test('an error for outsiders: origins only, masked, short', () => {
    assert.equal(
      redactError(`POST https://client.example/private/cb?token=${S} failed: 500; SharedAccessKey=${S}`),
      'POST https://client.example failed: 500; SharedAccessKey=***',
    );
    assert.equal(redactError('x'.repeat(500)).length, 200);
  });
});
