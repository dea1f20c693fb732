import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ManagedServer, freePort, requireBinary, waitForPort } from './base.js';

/**
 * NatsServer: nats-server (Debian 2.9) with JetStream, its file store under this server's own
 * directory (so a restart keeps the KV buckets), and the HTTP monitoring port for /varz.
 */
export class NatsServer extends ManagedServer {
  /** The monitoring port (/healthz, /varz). */
  monitorPort = 0;
  /**
   * @param authorization a nats-server `authorization { … }` block (users and their permissions),
   *   written to a config file the server reads; its flags still set address, ports and JetStream.
   */
  constructor(private readonly authorization?: string) {
    super('nats');
    requireBinary(['/usr/sbin/nats-server', '/usr/bin/nats-server'], 'nats-server');
  }
  get url(): string {
    return `nats://${this.host}:${this.port}`;
  }
  protected override async prepare(): Promise<void> {
    this.monitorPort = await freePort();
    if (this.authorization) writeFileSync(join(this.dir, 'nats.conf'), `authorization ${this.authorization}\n`);
  }
  protected override command() {
    return {
      bin: requireBinary(['/usr/sbin/nats-server', '/usr/bin/nats-server'], 'nats-server'),
      args: [
        ...(this.authorization ? ['-c', join(this.dir, 'nats.conf')] : []),
        ...['-a', this.host, '-p', String(this.port), '-m', String(this.monitorPort), '-js', '-sd', join(this.dir, 'jetstream'), '--server_name', 'baton-test'],
      ],
    };
  }
  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 30_000, this.child, this.host);
    // JetStream recovers its streams after the client port opens: wait until it says it is healthy.
    const until = Date.now() + 30_000;
    for (;;) {
      try {
        const res = await fetch(`http://${this.host}:${this.monitorPort}/healthz?js-enabled-only=true`);
        if (res.ok) {
          const health = await fetch(`http://${this.host}:${this.monitorPort}/healthz`);
          if (health.ok) return;
        }
      } catch {
        // not yet
      }
      if (Date.now() > until) throw new Error('nats /healthz never turned ok');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  /** varz reads the server's /varz (counters for the bench: in_msgs, out_msgs…). */
  async varz(): Promise<Record<string, unknown>> {
    const res = await fetch(`http://${this.host}:${this.monitorPort}/varz`);
    return (await res.json()) as Record<string, unknown>;
  }
}
