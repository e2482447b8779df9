/**
 * GET /api/events/keys: the public keys that verify callbacks (`v1a` ed25519 signatures), as a
 * JWKS. Anonymous: a public key signs nothing, and a client fetches it without any credential of
 * ours. It makes no Storage request.
 */
import type { HttpResponseInit } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import { json } from './http-errors';
import { openRoute } from './http-route';
import { pushdrainApp } from './pushdrain-app';

export function getEventKeys(app: PushdrainApp): HttpResponseInit {
  // Cached briefly: a rotation adds the new key ahead of using it alone, so clients refetch in time.
  return json(200, app.eventKeys(), { 'Cache-Control': 'public, max-age=300' });
}

openRoute('eventKeys', { route: 'events/keys', method: 'GET', handler: () => getEventKeys(pushdrainApp()) });
