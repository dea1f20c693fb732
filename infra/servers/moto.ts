import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ManagedServer, waitForPort } from './base.js';

/** MOTO_VERSION is the pinned moto release (scripts/install-moto.sh installs the same one). */
export const MOTO_VERSION = process.env.BATON_MOTO_VERSION ?? '5.2.5';

/** motoServerBin is the moto_server of the pinned virtual environment, or an error naming the install line. */
export function motoServerBin(): string {
  const cache = process.env.BATON_CACHE ?? join(homedir(), '.cache', 'baton');
  const venv = join(cache, `moto-${MOTO_VERSION}`);
  const bin = join(venv, 'bin', 'moto_server');
  if (!existsSync(join(venv, '.complete')) || !existsSync(bin)) {
    throw new Error(`moto ${MOTO_VERSION} is not installed in ${venv}: run \`bash scripts/install-moto.sh\` (or scripts/install-servers.sh)`);
  }
  return bin;
}

/**
 * MotoServer: moto (PyPI `moto[server]`, Apache-2.0), an implementation of the AWS APIs written
 * independently of baton, in server mode (`moto_server`) on a free loopback port. One server
 * speaks every service (EC2, Auto Scaling, DynamoDB, ...): the SDKs reach it through `endpoint`
 * (AWS_ENDPOINT_URL_* or a store URL's `endpoint=`), with any credentials.
 *
 * moto keeps its state in memory: `restart()` (and `kill()` + `start()`) comes back EMPTY, unlike
 * DynamoDB or the disk-backed servers here, so tests use it only for "the server is gone" faults
 * and `pause()`/`resume()` for a frozen one. `reset()` empties it without a restart.
 */
export class MotoServer extends ManagedServer {
  constructor() {
    super('moto');
    motoServerBin();
  }
  /** endpoint is the HTTP endpoint of every service. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  /** url is a baton store URL for the DynamoDB table `table` on this server. */
  url(table = 'baton'): string {
    return `dynamodb://${table}?endpoint=${encodeURIComponent(this.endpoint)}&region=us-east-1`;
  }
  /** reset drops every resource of every service (moto's own `/moto-api/reset`). */
  async reset(): Promise<void> {
    const res = await fetch(`${this.endpoint}/moto-api/reset`, { method: 'POST' });
    if (!res.ok) throw new Error(`moto reset answered ${res.status}`);
  }
  protected override command() {
    // No reloader (-r is off by default): one process, so pause/kill reach the whole server.
    return { bin: motoServerBin(), args: ['-H', '127.0.0.1', '-p', String(this.port)], env: { PYTHONUNBUFFERED: '1' } };
  }
  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 60_000, this.child);
    // The port opens before Flask's routes are built; a first request answers once they are.
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`${this.endpoint}/moto-api/data.json`)).ok) return;
      } catch (err) {
        if (i > 200) throw err;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
