import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ManagedServer, freePort, requireBinary, waitForPort } from './base.js';

/** EtcdServer: a single-member etcd 3.4 on loopback. */
export class EtcdServer extends ManagedServer {
  peerPort = 0;
  constructor() {
    super('etcd');
    requireBinary(['/usr/bin/etcd'], 'etcd-server');
  }
  get url(): string {
    return `etcd://127.0.0.1:${this.port}`;
  }
  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }
  protected override async prepare(): Promise<void> {
    this.peerPort = await freePort();
  }
  protected override command() {
    const client = `http://127.0.0.1:${this.port}`;
    const peer = `http://127.0.0.1:${this.peerPort}`;
    return {
      bin: requireBinary(['/usr/bin/etcd'], 'etcd-server'),
      args: [
        '--name', 'baton', '--data-dir', join(this.dir, 'data'),
        '--listen-client-urls', client, '--advertise-client-urls', client,
        '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
        '--initial-cluster', `baton=${peer}`, '--initial-cluster-state', existsSync(join(this.dir, 'data')) ? 'existing' : 'new',
        '--logger', 'zap', '--log-outputs', 'stderr',
      ],
      env: { ETCD_UNSUPPORTED_ARCH: process.arch === 'x64' ? '' : process.arch },
    };
  }
  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 30_000, this.child);
    const until = Date.now() + 30_000;
    for (;;) {
      try {
        const res = await fetch(`${this.endpoint}/health`);
        if (res.ok && ((await res.json()) as { health?: string }).health === 'true') return;
      } catch {
        // not yet
      }
      if (Date.now() > until) throw new Error('etcd /health never turned true');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
