import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ManagedServer } from './base.js';

/** The well-known development account every azurite answers to (public, from Microsoft's docs). */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

function azuriteMain(): string {
  let pkg: string;
  try {
    pkg = createRequire(import.meta.url).resolve('azurite/package.json');
  } catch {
    throw new Error('azurite is not installed: run `npm install --save-dev --save-exact azurite@3.35.0` (the newest release that runs on Node 20)');
  }
  return join(dirname(pkg), 'dist', 'src', 'blob', 'main.js');
}

/**
 * AzuriteServer: azurite's blob service alone (npm `azurite`, pinned 3.35.0 — later releases
 * need Node 21+), on a free loopback port with its data under this.dir.
 *
 * Azurite keeps its blob metadata in LokiJS and saves it every 5 s (and on SIGTERM), so a
 * kill -9 forgets up to 5 s of acknowledged writes — Azure itself does not. `restart()` therefore
 * stops azurite with SIGTERM (it saves, then exits) before starting it again; `kill()` stays a
 * SIGKILL for "the server is gone" faults, whose lost writes a test must not rely on.
 */
export class AzuriteServer extends ManagedServer {
  constructor() {
    super('azurite');
    azuriteMain();
  }
  /** connectionString names this server with the development account. */
  get connectionString(): string {
    return `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${AZURITE_KEY};BlobEndpoint=${this.endpoint};`;
  }
  /** endpoint is the account's blob URL. */
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}/${AZURITE_ACCOUNT}`;
  }
  protected override command() {
    return {
      bin: process.execPath,
      args: [
        azuriteMain(),
        '--blobHost', '127.0.0.1', '--blobPort', String(this.port),
        '--location', join(this.dir, 'data'), '--silent',
        // The SDK speaks a newer service version than azurite 3.35 knows; the calls baton makes exist in both.
        '--skipApiVersionCheck', '--disableProductStyleUrl',
      ],
    };
  }

  /** stopGracefully sends SIGTERM so azurite saves its metadata, and waits for it to exit. */
  async stopGracefully(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    this.resume();
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    const timer = setTimeout(() => void this.kill(), 10_000);
    await exited;
    clearTimeout(timer);
  }

  /** restart stops azurite gracefully (see the class comment) and starts it on the same port and data. */
  override async restart(): Promise<void> {
    await this.stopGracefully();
    await this.start();
  }
}
