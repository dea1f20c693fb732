import { ManagedServer, requireBinary } from './base.js';

/** RedisServer: redis-server 7 with AOF fsync always (so terms survive a restart). */
export class RedisServer extends ManagedServer {
  constructor(private readonly extraArgs: string[] = []) {
    super('redis');
    requireBinary(['/usr/bin/redis-server'], 'redis-server');
  }
  get url(): string {
    return `redis://${this.host}:${this.port}`;
  }
  protected override command() {
    return {
      bin: requireBinary(['/usr/bin/redis-server'], 'redis-server'),
      args: ['--port', String(this.port), '--bind', this.host, '--dir', this.dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--notify-keyspace-events', 'Ex',
        // Placed on a host of its own (chaos --net netns), clients come from other addresses: without a
        // password, protected mode would refuse them.
        ...(this.host === '127.0.0.1' ? [] : ['--protected-mode', 'no']),
        ...this.extraArgs],
    };
  }
}
