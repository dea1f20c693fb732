import { ManagedServer, requireBinary } from './base.js';

/** RedisServer: redis-server 7 with AOF fsync always (so terms survive a restart). */
export class RedisServer extends ManagedServer {
  constructor(private readonly extraArgs: string[] = []) {
    super('redis');
    requireBinary(['/usr/bin/redis-server'], 'redis-server');
  }
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }
  protected override command() {
    return {
      bin: requireBinary(['/usr/bin/redis-server'], 'redis-server'),
      args: ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--notify-keyspace-events', 'Ex', ...this.extraArgs],
    };
  }
}
