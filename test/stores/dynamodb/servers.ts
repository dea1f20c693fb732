/**
 * Shared setup of the DynamoDB test files: a real server implementing the DynamoDB API — dynalite
 * (infra/servers/dynalite.ts, on LevelDB) or moto (infra/servers/moto.ts, written independently
 * of both baton and dynalite) — and an environment that keeps the AWS SDK on loopback: static
 * test credentials (both accept any), no shared config files, and instance metadata disabled so
 * the credential chain never reaches for 169.254.169.254.
 */
import { after } from 'node:test';
import { DynaliteServer, MotoServer } from '../../../infra/servers/index.js';
import { openDynamoStore, type DynamoStore } from '../../../src/stores/dynamodb/index.js';

/** LOOPBACK_AWS_ENV is the environment every DynamoDB test (and its CLI children) runs with. */
export const LOOPBACK_AWS_ENV = {
  AWS_ACCESS_KEY_ID: 'baton-test',
  AWS_SECRET_ACCESS_KEY: 'baton-test',
  AWS_REGION: 'us-east-1',
  AWS_EC2_METADATA_DISABLED: 'true',
  AWS_CONFIG_FILE: '/nonexistent/baton-aws-config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/baton-aws-credentials',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
} as const;
Object.assign(process.env, LOOPBACK_AWS_ENV);
delete process.env.AWS_PROFILE;
delete process.env.AWS_ENDPOINT_URL;
delete process.env.AWS_ENDPOINT_URL_DYNAMODB;

/** DynamoServer is either implementation; `keepsData` says whether a restart keeps the tables (moto's do not). */
export type DynamoServer = (DynaliteServer | MotoServer) & { readonly keepsData: boolean };

/** DynamoImplementation names the implementations a parametrized test file can run on. */
export type DynamoImplementation = 'dynalite' | 'moto';

/** startDynamoServer starts `kind` for this test file and stops it after the file. */
export async function startDynamoServer(kind: DynamoImplementation): Promise<DynamoServer> {
  const server = kind === 'moto' ? new MotoServer() : new DynaliteServer();
  await server.start();
  after(() => server.stop());
  return Object.assign(server, { keepsData: kind === 'dynalite' });
}

/** startDynalite starts a dynalite server for this test file and stops it after the file. */
export function startDynalite(): Promise<DynamoServer> {
  return startDynamoServer('dynalite');
}

/** openOn opens a store on `server`'s table `table` (default "baton"), with a short request timeout. */
export function openOn(server: DynamoServer, table = 'baton', timeoutMs = 1_000): Promise<DynamoStore> {
  return openDynamoStore({ table, endpoint: server.endpoint, region: 'us-east-1', timeoutMs });
}
