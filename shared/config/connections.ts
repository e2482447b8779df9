/**
 * Connection settings in the Azure Functions convention: a connection string under the
 * name itself, or identity-based `NAME__accountName` / `__blobServiceUri` / `__queueServiceUri`
 * / `__fullyQualifiedNamespace` with optional `__credential` and `__clientId`.
 * Errors name the setting, never its value: connection strings carry keys.
 */
import { ConfigError } from '../errors';

export type Env = Readonly<Record<string, string | undefined>>;

export interface IdentityOptions {
  /** `managedidentity` selects ManagedIdentityCredential; otherwise DefaultAzureCredential. */
  credential?: string;
  /** Client id of a user-assigned managed identity. */
  clientId?: string;
}

export type StorageConnection =
  | { kind: 'connectionString'; setting: string; connectionString: string; accountName: string }
  | ({
      kind: 'identity';
      setting: string;
      blobServiceUri: string;
      queueServiceUri: string;
      accountName: string;
    } & IdentityOptions);

export type ServiceBusConnection =
  | { kind: 'connectionString'; setting: string; connectionString: string; fullyQualifiedNamespace: string }
  | ({ kind: 'identity'; setting: string; fullyQualifiedNamespace: string } & IdentityOptions);

function parseConnectionString(setting: string, value: string): Map<string, string> {
  const parts = new Map<string, string>();
  for (const segment of value.split(';')) {
    if (segment.trim() === '') continue;
    const eq = segment.indexOf('=');
    if (eq <= 0) throw new ConfigError(setting, 'is not a well-formed connection string (expected Key=Value;… pairs)');
    parts.set(segment.slice(0, eq).trim().toLowerCase(), segment.slice(eq + 1).trim());
  }
  return parts;
}

function accountFromUri(setting: string, uri: string): string {
  let host: string;
  try {
    host = new URL(uri).hostname;
  } catch {
    throw new ConfigError(setting, 'is not a valid URL');
  }
  // Azurite and other emulators put the account in the path: http://127.0.0.1:10000/devstoreaccount1
  const first = host.split('.')[0] ?? host;
  if (host === '127.0.0.1' || host === 'localhost') return new URL(uri).pathname.split('/')[1] || 'devstoreaccount1';
  return first;
}

function identityOptions(env: Env, name: string): IdentityOptions {
  const credential = env[`${name}__credential`];
  const clientId = env[`${name}__clientId`];
  return { ...(credential ? { credential } : {}), ...(clientId ? { clientId } : {}) };
}

function storageFrom(env: Env, name: string): StorageConnection | undefined {
  const raw = env[name];
  if (raw && raw.trim() !== '') {
    const parts = parseConnectionString(name, raw.trim());
    if (parts.get('usedevelopmentstorage') === 'true') {
      return { kind: 'connectionString', setting: name, connectionString: raw.trim(), accountName: 'devstoreaccount1' };
    }
    const accountName = parts.get('accountname');
    if (!accountName && !parts.get('blobendpoint')) {
      throw new ConfigError(name, 'connection string has neither AccountName nor BlobEndpoint');
    }
    const blobEndpoint = parts.get('blobendpoint');
    return {
      kind: 'connectionString',
      setting: name,
      connectionString: raw.trim(),
      accountName: accountName ?? accountFromUri(name, blobEndpoint ?? ''),
    };
  }
  const accountName = env[`${name}__accountName`];
  const blob = env[`${name}__blobServiceUri`];
  const queue = env[`${name}__queueServiceUri`];
  if (!accountName && !blob && !queue) return undefined;
  if (!accountName && (!blob || !queue)) {
    throw new ConfigError(
      `${name}__blobServiceUri`,
      `set both ${name}__blobServiceUri and ${name}__queueServiceUri, or ${name}__accountName`,
    );
  }
  const blobServiceUri = blob ?? `https://${accountName}.blob.core.windows.net`;
  const queueServiceUri = queue ?? `https://${accountName}.queue.core.windows.net`;
  return {
    kind: 'identity',
    setting: name,
    blobServiceUri,
    queueServiceUri,
    accountName: accountName ?? accountFromUri(`${name}__blobServiceUri`, blobServiceUri),
    ...identityOptions(env, name),
  };
}

/** `StorageConnection`, falling back to `AzureWebJobsStorage` as the Functions host does. */
export function storageConnection(env: Env): StorageConnection {
  const found = storageFrom(env, 'StorageConnection') ?? storageFrom(env, 'AzureWebJobsStorage');
  if (!found) {
    throw new ConfigError(
      'StorageConnection',
      'is not set (nor AzureWebJobsStorage): give a connection string or StorageConnection__accountName',
    );
  }
  return found;
}

/** `ServiceBusConnection` (or another binding's connection name); undefined when absent. */
export function serviceBusConnection(env: Env, name = 'ServiceBusConnection'): ServiceBusConnection | undefined {
  const raw = env[name];
  if (raw && raw.trim() !== '') {
    const parts = parseConnectionString(name, raw.trim());
    const endpoint = parts.get('endpoint');
    if (!endpoint) throw new ConfigError(name, 'connection string has no Endpoint');
    let host: string;
    try {
      host = new URL(endpoint).host;
    } catch {
      throw new ConfigError(name, 'Endpoint is not a valid sb:// URL');
    }
    return { kind: 'connectionString', setting: name, connectionString: raw.trim(), fullyQualifiedNamespace: host };
  }
  const fqns = env[`${name}__fullyQualifiedNamespace`];
  if (!fqns) return undefined;
  if (!/^[A-Za-z0-9.-]+(:\d+)?$/.test(fqns)) {
    throw new ConfigError(
      `${name}__fullyQualifiedNamespace`,
      'must be a host name such as myns.servicebus.windows.net',
    );
  }
  return { kind: 'identity', setting: name, fullyQualifiedNamespace: fqns, ...identityOptions(env, name) };
}
