import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedServer, freePort, waitForPort } from './base.js';

/**
 * DynaliteServer: dynalite (npm devDependency), an implementation of the DynamoDB API on
 * LevelDB, run as its own Node process (dynalite-main.mjs) so it can be killed, restarted with its
 * data (on-disk LevelDB under this.dir) and frozen with SIGSTOP like the Debian servers. The
 * process also counts the API calls it receives, by operation, on `statsUrl` (for the bench).
 *
 * What it lacks next to DynamoDB: TransactWriteItems/TransactGetItems (unknown operations),
 * throttling, and DynamoDB Streams. Tables take `createTableMs` (50 ms here) to turn ACTIVE.
 */
export class DynaliteServer extends ManagedServer {
  statsPort = 0;
  constructor() {
    super('dynalite');
    try {
      createRequire(import.meta.url).resolve('dynalite');
    } catch {
      throw new Error('dynalite is not installed: run `npm install` (it is a devDependency)');
    }
  }
  /** statsUrl answers with the server's request counts by operation, as JSON. */
  get statsUrl(): string {
    return `http://127.0.0.1:${this.statsPort}/`;
  }
  /** endpoint is the HTTP endpoint for the SDK's `endpoint` option. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  /** url is a baton store URL for `table` on this server. */
  url(table = 'baton'): string {
    return `dynamodb://${table}?endpoint=${encodeURIComponent(this.endpoint)}&region=us-east-1`;
  }
  protected override async prepare(): Promise<void> {
    this.statsPort = await freePort();
  }
  protected override command() {
    const main = fileURLToPath(new URL('./dynalite-main.mjs', import.meta.url));
    return {
      bin: process.execPath,
      args: [main, '--port', String(this.port), '--stats-port', String(this.statsPort), '--path', join(this.dir, 'data')],
    };
  }
  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 30_000, this.child);
    await waitForPort(this.statsPort, 30_000, this.child);
  }
}
