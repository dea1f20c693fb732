import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ManagedServer, waitForPort } from './base.js';

/**
 * DynaliteServer: dynalite (npm devDependency), an implementation of the DynamoDB API on
 * LevelDB, run as its own Node process so it can be killed, restarted with its data (on-disk
 * LevelDB under this.dir) and frozen with SIGSTOP like the Debian servers.
 *
 * What it lacks next to DynamoDB: TransactWriteItems/TransactGetItems (unknown operations),
 * throttling, and DynamoDB Streams. Tables take `createTableMs` (50 ms here) to turn ACTIVE.
 */
export class DynaliteServer extends ManagedServer {
  private readonly cli: string;
  constructor() {
    super('dynalite');
    let pkg: string;
    try {
      pkg = createRequire(import.meta.url).resolve('dynalite/package.json');
    } catch {
      throw new Error('dynalite is not installed: run `npm install` (it is a devDependency)');
    }
    this.cli = join(dirname(pkg), 'cli.js');
  }
  /** endpoint is the HTTP endpoint for the SDK's `endpoint` option. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  /** url is a baton store URL for `table` on this server. */
  url(table = 'baton'): string {
    return `dynamodb://${table}?endpoint=${encodeURIComponent(this.endpoint)}&region=us-east-1`;
  }
  protected override command() {
    return {
      bin: process.execPath,
      args: [this.cli, '--host', '127.0.0.1', '--port', String(this.port), '--path', join(this.dir, 'data'), '--createTableMs', '50', '--deleteTableMs', '50', '--updateTableMs', '50'],
    };
  }
  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 30_000, this.child);
  }
}
