import { spawnSync } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, readdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { ManagedServer, requireBinary, waitForPort } from './base.js';

/** PostgresServer: initdb + postgres (15) as the postgres user, trust auth, on loopback. */
export class PostgresServer extends ManagedServer {
  private readonly binDir: string;
  private readonly uid?: number;
  private readonly gid?: number;
  constructor() {
    super('postgres');
    const versions = existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort().reverse() : [];
    this.binDir = versions.length ? `/usr/lib/postgresql/${versions[0]}/bin` : '/usr/lib/postgresql/15/bin';
    requireBinary([`${this.binDir}/postgres`], 'postgresql');
    if (userInfo().uid === 0) {
      const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
      this.uid = id('-u');
      this.gid = id('-g');
      chownSync(this.dir, this.uid, this.gid);
    }
  }
  get url(): string {
    return `postgres://postgres@${this.host}:${this.port}/postgres`;
  }
  protected override async prepare(): Promise<void> {
    const r = spawnSync(`${this.binDir}/initdb`, ['-D', join(this.dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8'], {
      uid: this.uid,
      gid: this.gid,
      encoding: 'utf8',
      cwd: this.dir,
    });
    if (r.status !== 0) throw new Error(`initdb failed: ${r.stderr || r.stdout}`);
    // Placed on a host of its own (chaos --net netns), clients come from the run's other hosts.
    if (this.host !== '127.0.0.1') appendFileSync(join(this.dir, 'data', 'pg_hba.conf'), `host all all ${this.host.replace(/\.\d+$/, '.0')}/24 trust\n`);
  }
  protected override command() {
    return {
      bin: `${this.binDir}/postgres`,
      args: ['-D', join(this.dir, 'data'), '-p', String(this.port), '-h', this.host, '-k', this.dir, '-c', 'fsync=off', '-c', 'max_connections=300', '-c', 'shared_preload_libraries=pg_stat_statements'],
      uid: this.uid,
      gid: this.gid,
    };
  }
  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 30_000, this.child, this.host);
    const until = Date.now() + 30_000;
    for (;;) {
      const r = spawnSync(`${this.binDir}/pg_isready`, ['-h', this.host, '-p', String(this.port)], { encoding: 'utf8' });
      if (r.status === 0) return;
      if (Date.now() > until) throw new Error('pg_isready never succeeded');
      await new Promise((res) => setTimeout(res, 100));
    }
  }
}
