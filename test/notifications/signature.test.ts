import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  generateSigningSecret,
  signatureOf,
  signedHeaders,
} from '../../src/domains/notifications/webhook-signature.ts';
import { verifyStandardWebhook } from './receiver.ts';

// The Standard Webhooks specification's published example (its reference libraries test
// against it): matching it is what lets a receiver verify svc with any of those libraries.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

test('Standard Webhooks: svc signs the published example exactly', () => {
  assert.equal(
    signatureOf(VECTOR.secret, VECTOR.id, VECTOR.timestamp, VECTOR.body),
    VECTOR.signature,
  );
});

test("Standard Webhooks: the test receiver's own verifier accepts the published example and refuses changes", () => {
  const headers = {
    id: VECTOR.id,
    timestamp: String(VECTOR.timestamp),
    signature: VECTOR.signature,
  };
  assert.equal(verifyStandardWebhook(VECTOR.secret, headers, VECTOR.body, VECTOR.timestamp), true);
  assert.equal(
    verifyStandardWebhook(VECTOR.secret, headers, `${VECTOR.body} `, VECTOR.timestamp),
    false,
  );
  assert.equal(
    verifyStandardWebhook(
      VECTOR.secret,
      { ...headers, id: 'msg_other' },
      VECTOR.body,
      VECTOR.timestamp,
    ),
    false,
  );
  // Outside the five-minute window.
  assert.equal(
    verifyStandardWebhook(VECTOR.secret, headers, VECTOR.body, VECTOR.timestamp + 301),
    false,
  );
});

test('Standard Webhooks: a generated secret is whsec_ and 24-64 random bytes, and the headers verify', () => {
  const secret = generateSigningSecret();
  assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  const bytes = Buffer.from(secret.slice('whsec_'.length), 'base64').length;
  assert.ok(bytes >= 24 && bytes <= 64);
  assert.notEqual(generateSigningSecret(), secret);
  const at = new Date();
  const h = signedHeaders(secret, 'a-delivery', at, '{"type":"webhook.test"}');
  assert.equal(h['webhook-timestamp'], String(Math.floor(at.getTime() / 1000)));
  assert.equal(
    verifyStandardWebhook(
      secret,
      {
        id: h['webhook-id'] ?? '',
        timestamp: h['webhook-timestamp'] ?? '',
        signature: h['webhook-signature'] ?? '',
      },
      '{"type":"webhook.test"}',
    ),
    true,
  );
});
