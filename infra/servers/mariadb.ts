import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { ManagedServer, requireBinary, waitForPort } from './base.js';

const SERVER = ['/usr/sbin/mariadbd', '/usr/sbin/mysqld'];
const INSTALL_DB = ['/usr/bin/mariadb-install-db', '/usr/bin/mysql_install_db'];
const CLIENT = ['/usr/bin/mariadb', '/usr/bin/mysql'];

/**
 * MariaDBServer: a private mariadbd (Debian 10.11) with its own datadir, made by
 * mariadb-install-db, listening on a free loopback port, its socket in its own directory; the
 * machine's service on 3306 is never touched. Runs as the `mysql` user when started as root.
 * A database `baton` and a user `baton`/`baton` (all privileges on it) are made at first start.
 */
export class MariaDBServer extends ManagedServer {
  protected readonly uid?: number;
  protected readonly gid?: number;
  private initialised = false;
  constructor(name = 'mariadb') {
    super(name);
    requireBinary(SERVER, 'mariadb-server');
    if (userInfo().uid === 0) {
      const id = (flag: string) => Number(spawnSync('id', [flag, 'mysql'], { encoding: 'utf8' }).stdout.trim());
      this.uid = id('-u');
      this.gid = id('-g');
      chownSync(this.dir, this.uid, this.gid);
    }
  }
  get url(): string {
    return `mysql://baton:baton@${this.host}:${this.port}/baton`;
  }
  get socket(): string {
    return join(this.dir, 'mysqld.sock');
  }
  /** Its own temporary directory: two servers bootstrapping at once in /tmp collide on temp table files. */
  protected get tmp(): string {
    return join(this.dir, 'tmp');
  }
  protected override async prepare(): Promise<void> {
    mkdirSync(this.tmp, { recursive: true });
    if (this.uid !== undefined) chownSync(this.tmp, this.uid, this.gid!);
    const r = spawnSync(
      requireBinary(INSTALL_DB, 'mariadb-server'),
      [
        '--no-defaults', `--datadir=${join(this.dir, 'data')}`, '--auth-root-authentication-method=normal', '--skip-test-db',
        `--tmpdir=${this.tmp}`, ...(this.uid !== undefined ? ['--user=mysql'] : []),
      ],
      { encoding: 'utf8', cwd: this.dir, env: { ...process.env, TMPDIR: this.tmp } },
    );
    if (r.status !== 0) throw new Error(`mariadb-install-db failed: ${r.stderr || r.stdout}`);
  }
  protected override command() {
    return {
      bin: requireBinary(SERVER, 'mariadb-server'),
      args: [
        '--no-defaults', `--datadir=${join(this.dir, 'data')}`, `--port=${this.port}`, `--bind-address=${this.host}`,
        `--socket=${this.socket}`, `--pid-file=${join(this.dir, 'mysqld.pid')}`, `--tmpdir=${this.tmp}`, '--skip-name-resolve',
        '--innodb-buffer-pool-size=64M', '--innodb-log-file-size=32M', '--max-connections=500', '--skip-log-bin',
        ...(this.uid !== undefined ? ['--user=mysql'] : []),
        ...this.extraArgs(),
      ],
    };
  }
  /** Further server options (a Galera node's wsrep settings). */
  protected extraArgs(): string[] {
    return [];
  }
  /** Resolves once the server takes queries, after its port opens (a Galera node: once synced). */
  protected async serving(): Promise<void> {}
  protected override async ready(): Promise<void> {
    await waitForPort(this.port, 60_000, this.child, this.host);
    await this.serving();
    if (!this.initialised) {
      // Placed on a host of its own (chaos --net netns), clients come from the run's other hosts.
      const from = this.host === '127.0.0.1' ? '127.0.0.1' : '%';
      this.sql(
        `CREATE DATABASE IF NOT EXISTS baton; CREATE USER IF NOT EXISTS 'baton'@'${from}' IDENTIFIED BY 'baton'; GRANT ALL ON baton.* TO 'baton'@'${from}'; GRANT PROCESS ON *.* TO 'baton'@'${from}';`,
      );
      this.initialised = true;
    }
  }
  /** sql runs statements as root over the server's socket (setup and test admin only). */
  sql(statements: string): string {
    const client = CLIENT.find((p) => existsSync(p)) ?? 'mariadb';
    const r = spawnSync(client, ['--no-defaults', '-uroot', `--socket=${this.socket}`, '-N', '-B', '-e', statements], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`mariadb: ${r.stderr.trim() || r.stdout.trim()}`);
    return r.stdout;
  }
}
