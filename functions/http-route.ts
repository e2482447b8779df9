/**
 * The one way an HTTP function is made: its registration (route, method, platform key level), its
 * access check and its error mapping, in one place, so no route can forget one of them.
 *
 * A guarded route authorizes first, with its roles from FUNCTION_ACCESS (route-access.ts): a
 * refused request reaches no use case, so it reads, writes and reveals nothing. Whatever the
 * handler throws becomes the answer errorResponse maps it to (http-errors.ts). An open route has no
 * credential to check and answers from memory; it is only registered, with `anonymous`.
 */
import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';

import type { PushdrainApp } from '../shared/app';
import type { Principal } from '../shared/auth/principal';
import { errorResponse } from './http-errors';
import { pushdrainApp } from './pushdrain-app';
import { authLevel, type GuardedFunction, type KeyLevel, type OpenFunction, rolesOf } from './route-access';

// HTTP streams: the worker invokes a handler once the headers are in and hands it the body as a
// stream, so a guarded route checks the caller before a byte of the body is read, and a refused
// token costs no memory for the body. Without them the host buffers up to 100 MB per request,
// token or not, before the worker sees it. Before the first registration: setup locks at start.
app.setup({ enableHttpStream: true });

/** A guarded route's handler as tests and the host call it: the app it serves, the request, the invocation. */
export type HttpHandler = (
  app: PushdrainApp,
  req: HttpRequest,
  context: InvocationContext,
) => Promise<HttpResponseInit>;

/** What a guarded route's use case gets: the request, and who was let in. */
export interface RouteCall {
  app: PushdrainApp;
  req: HttpRequest;
  context: InvocationContext;
  caller: Principal;
}

interface Registration {
  /** Below the host's `api/` prefix, as the contract fixes it (e.g. `batches/{batchId}`). */
  route: string;
  method: 'GET' | 'POST';
}

export interface GuardedRoute extends Registration {
  /** The platform's key level while tokens are not the check (PUSHDRAIN_AUTH keys or both). @defaultValue 'function' */
  keyLevel?: KeyLevel;
  handle(call: RouteCall): Promise<HttpResponseInit>;
  /** Sees each error answer, a refused credential's included (ingest logs refused submissions). */
  refused?(response: HttpResponseInit, error: unknown, context: InvocationContext): void;
}

export interface OpenRoute extends Registration {
  handler(req: HttpRequest, context: InvocationContext): HttpResponseInit | Promise<HttpResponseInit>;
}

/** Registers a guarded route and returns its handler (what the host calls, with the process's app). */
export function guardedRoute(name: GuardedFunction, spec: GuardedRoute): HttpHandler {
  const roles = rolesOf(name);
  const handler: HttpHandler = async (pushdrain, req, context) => {
    try {
      const caller = await pushdrain.authorize(req.headers.get('authorization'), roles);
      return await spec.handle({ app: pushdrain, req, context, caller });
    } catch (e) {
      const response = errorResponse(e, context);
      spec.refused?.(response, e, context);
      return response;
    }
  };
  app.http(name, {
    route: spec.route,
    methods: [spec.method],
    authLevel: authLevel(spec.keyLevel ?? 'function'),
    handler: (req, context) => handler(pushdrainApp(), req, context),
  });
  return handler;
}

/** Registers an open route: anonymous on the platform and in the app. */
export function openRoute(name: OpenFunction, spec: OpenRoute): void {
  app.http(name, {
    route: spec.route,
    methods: [spec.method],
    authLevel: 'anonymous',
    handler: (req, context) => spec.handler(req, context),
  });
}
