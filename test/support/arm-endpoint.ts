/**
 * A local stand-in for the Azure management endpoint: HTTPS on 127.0.0.1 with a throw-away
 * self-signed certificate (the SDK sends bearer tokens over HTTPS only), one function app
 * whose scale settings GET and PATCH read and change, and a record of every request.
 * Faults: answer the next requests with a given status (429 with Retry-After, 403).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import type { TokenCredential } from '@azure/identity';

interface RecordedRequest {
  method: string;
  /** Path and query, e.g. /subscriptions/…/sites/app?api-version=2025-05-01 */
  path: string;
  body: unknown;
  authorization: string | undefined;
}

interface Fault {
  status: number;
  headers?: Record<string, string>;
  /** Only requests with this method. */
  method?: string;
}

export interface ArmEndpoint {
  readonly url: string;
  /** The certificate to trust (TlsSettings.ca). */
  readonly ca: string;
  readonly requests: RecordedRequest[];
  /** The Flex site's JSON as GET returns it (PATCH replaces properties.functionAppConfig). */
  site: Record<string, unknown>;
  /** The Elastic Premium config/web properties. */
  webConfig: Record<string, unknown>;
  /** Answers the next matching requests with these faults, in order. */
  faults: Fault[];
  /** Requests since the last call. */
  take(): RecordedRequest[];
  close(): Promise<void>;
}

export const fakeCredential: TokenCredential = {
  getToken: () => Promise.resolve({ token: 'test-token', expiresOnTimestamp: Date.now() + 3_600_000 }),
};

/** A self-signed certificate for 127.0.0.1, made by openssl in a temporary directory. */
function selfSigned(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'arm-endpoint-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          key,
          '-out',
          cert,
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
        ],
        { stdio: 'ignore' },
      );
    } catch (e) {
      throw new Error(
        `the management-endpoint tests need openssl to make a throw-away certificate: ${(e as Error).message}`,
      );
    }
    return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A Flex Consumption site as ARM returns it, with an always-ready entry for the HTTP group. */
export function flexSite(maximumInstanceCount = 100): Record<string, unknown> {
  return {
    id: '/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg-test/providers/Microsoft.Web/sites/func-test',
    name: 'func-test',
    type: 'Microsoft.Web/sites',
    kind: 'functionapp,linux',
    location: 'westeurope',
    properties: {
      state: 'Running',
      functionAppConfig: {
        deployment: {
          storage: {
            type: 'blobContainer',
            value: 'https://st.blob.core.windows.net/app-package',
            authentication: { type: 'UserAssignedIdentity', userAssignedIdentityResourceId: '/subscriptions/x/id' },
          },
        },
        runtime: { name: 'node', version: '22' },
        scaleAndConcurrency: {
          alwaysReady: [{ name: 'http', instanceCount: 1 }],
          maximumInstanceCount,
          instanceMemoryMB: 2048,
        },
      },
    },
  };
}

export async function startArmEndpoint(): Promise<ArmEndpoint> {
  const { key, cert } = selfSigned();
  const requests: RecordedRequest[] = [];
  let cursor = 0;
  const state = {
    site: flexSite(),
    webConfig: { minimumElasticInstanceCount: 1, functionAppScaleLimit: 20, numberOfWorkers: 1 } as Record<
      string,
      unknown
    >,
    faults: [] as Fault[],
  };
  const server: Server = createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = text === '' ? undefined : (JSON.parse(text) as unknown);
      } catch {
        body = text;
      }
      const path = req.url ?? '';
      requests.push({ method: req.method ?? '', path, body, authorization: req.headers.authorization });
      const send = (status: number, payload: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(payload === undefined ? '' : JSON.stringify(payload));
      };
      const fault = state.faults[0];
      if (fault && (!fault.method || fault.method === req.method)) {
        state.faults.shift();
        send(
          fault.status,
          {
            error: {
              code: fault.status === 429 ? 'TooManyRequests' : 'AuthorizationFailed',
              message: `injected ${fault.status}`,
            },
          },
          fault.headers,
        );
        return;
      }
      const route = path.split('?')[0] ?? '';
      if (/\/providers\/Microsoft\.Web\/sites\/[^/]+\/config\/web$/.test(route)) {
        if (req.method === 'PATCH')
          Object.assign(state.webConfig, (body as { properties?: object } | undefined)?.properties ?? {});
        send(200, { id: `${route}`, name: 'web', type: 'Microsoft.Web/sites/config', properties: state.webConfig });
        return;
      }
      if (/\/providers\/Microsoft\.Web\/sites\/[^/]+$/.test(route)) {
        if (req.method === 'PATCH') {
          const patch = (body as { properties?: { functionAppConfig?: unknown } } | undefined)?.properties
            ?.functionAppConfig;
          if (patch !== undefined) (state.site.properties as Record<string, unknown>).functionAppConfig = patch;
        }
        send(200, state.site);
        return;
      }
      send(404, { error: { code: 'NotFound', message: route } });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    ca: cert,
    requests,
    get site() {
      return state.site;
    },
    set site(v) {
      state.site = v;
    },
    get webConfig() {
      return state.webConfig;
    },
    set webConfig(v) {
      state.webConfig = v;
    },
    get faults() {
      return state.faults;
    },
    set faults(v) {
      state.faults = v;
    },
    take: () => {
      const out = requests.slice(cursor);
      cursor = requests.length;
      return out;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
