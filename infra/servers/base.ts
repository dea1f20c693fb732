/**
 * The managed-server base shared by tests, chaos runs and benchmarks: each server is started from its Debian binary on a
 * free loopback port in a temporary directory, and can be killed, paused (SIGSTOP), resumed and
 * restarted with its data kept. The standard-port services a machine may run are never used.
 *
 * A missing binary is an error that names the install line — never a silent skip.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';

// Servers run in their own process groups (so a pause freezes all of a server's processes);
// make sure none outlives the process that started it.
const started = new Set<ManagedServer>();
process.once('exit', () => {
  for (const s of started) s.killNow();
});
import { join } from 'node:path';

/** descendants lists every process below `root`, read from /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(name));
      children.set(ppid, list);
    } catch {
      // exited while we looked
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

/** freePort asks the kernel for a free loopback port. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** waitForPort resolves once something accepts TCP connections on host:port (default 127.0.0.1). */
export async function waitForPort(port: number, timeoutMs = 20_000, child?: ChildProcess, host = '127.0.0.1'): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    // A server killed by a signal (a crash) has no exit code, only a signal code.
    if (child && (child.exitCode !== null || child.signalCode !== null)) throw new Error(`server exited with ${child.exitCode ?? child.signalCode} before listening on ${port}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect({ host, port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listening on ${host}:${port} after ${timeoutMs}ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** requireBinary returns the first existing path, or throws with the apt line that installs it. */
export function requireBinary(paths: string[], aptPackage: string): string {
  for (const p of paths) if (existsSync(p)) return p;
  const found = spawnSync('sh', ['-c', `command -v ${paths[0]!.split('/').pop()}`], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  throw new Error(`${paths[0]} is not installed: run \`apt-get install -y ${aptPackage}\` (or scripts/install-servers.sh)`);
}

/** ManagedServer is one server process the harness owns. */
export abstract class ManagedServer {
  readonly dir: string;
  port = 0;
  protected child?: ChildProcess;
  private paused = false;
  log = '';
  /** The address the server listens on: loopback unless placed on a host (see place). */
  host = '127.0.0.1';
  private wrap?: (bin: string, args: string[]) => { bin: string; args: string[] };

  constructor(readonly name: string) {
    this.dir = mkdtempSync(join(tmpdir(), `baton-${name}-`));
  }

  /** The command line that runs the server on this.port with its data in this.dir. */
  protected abstract command(): { bin: string; args: string[]; uid?: number; gid?: number; env?: NodeJS.ProcessEnv };
  /** One-time preparation of the data directory (e.g. initdb). */
  protected async prepare(): Promise<void> {}
  /** Resolves once the server answers. */
  protected async ready(): Promise<void> {
    await waitForPort(this.port, 30_000, this.child, this.host);
  }

  /**
   * place runs the server on another host (chaos --net netns: infra/netns.ts): listening on
   * `host`, its command run through `wrap` (`ip netns exec …`). Servers that support it use
   * this.host in their command line; call before start().
   */
  place(host: string, wrap: (bin: string, args: string[]) => { bin: string; args: string[] }): this {
    this.host = host;
    this.wrap = wrap;
    return this;
  }

  /** killNow sends SIGKILL to the server's group synchronously (used at process exit). */
  killNow(): void {
    this.signalGroup('SIGCONT');
    this.signalGroup('SIGKILL');
  }

  /** start prepares (first time) and launches the server; resolves when it is ready. */
  async start(): Promise<this> {
    started.add(this);
    if (this.port === 0) {
      this.port = await freePort();
      await this.prepare();
    }
    let { bin, args, uid, gid, env } = this.command();
    if (this.wrap) {
      // `ip netns exec` needs root: drop to the server's user after entering the namespace.
      const user = uid === undefined ? [] : ['setpriv', `--reuid=${uid}`, `--regid=${gid ?? uid}`, '--clear-groups', '--'];
      ({ bin, args } = this.wrap(user[0] ?? bin, [...user.slice(1), ...(user.length ? [bin] : []), ...args]));
      uid = gid = undefined;
    }
    this.log = '';
    // Its own process group, so pause/kill reach every process of the server (postgres forks a
    // backend per connection). Not unref'd: `await kill()` waits for its 'exit', and an unref'd
    // child would let Node exit mid-wait (code 13), failing the test file after its tests passed.
    this.child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], uid, gid, env: { ...process.env, ...env }, cwd: this.dir, detached: true });
    const keep = (b: Buffer) => {
      this.log = (this.log + b.toString()).slice(-20_000);
    };
    this.child.stdout!.on('data', keep);
    this.child.stderr!.on('data', keep);
    this.paused = false;
    try {
      await this.ready();
    } catch (err) {
      throw new Error(`${this.name} did not start: ${(err as Error).message}\n${this.log.slice(-2000)}`);
    }
    return this;
  }

  /** pid of the running server process, if any. */
  get pid(): number | undefined {
    return this.child?.exitCode === null ? this.child.pid : undefined;
  }

  /** kill stops the server at once (SIGKILL), keeping its data. */
  async kill(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    if (this.paused) this.resume();
    const exited = new Promise((r) => c.once('exit', r));
    const others = c.pid ? descendants(c.pid) : [];
    this.signalGroup('SIGKILL');
    await exited;
    // Backends that left the group die a moment later; a restart must not find them alive.
    for (let i = 0; i < 100 && others.some((p) => existsSync(`/proc/${p}`)); i++) await new Promise((r) => setTimeout(r, 50));
  }

  /** pause freezes the server (SIGSTOP): connections stay open, nothing answers. */
  pause(): void {
    if (this.signalGroup('SIGSTOP')) this.paused = true;
  }

  /** resume thaws a paused server (SIGCONT). */
  resume(): void {
    if (this.signalGroup('SIGCONT')) this.paused = false;
  }

  /**
   * signalGroup signals every process of the server: its process group, and every descendant
   * (PostgreSQL backends call setsid(), so they leave the group).
   */
  private signalGroup(signal: NodeJS.Signals): boolean {
    const pid = this.child?.pid;
    // A server that has exited may have its pid reused by an unrelated process: never signal it.
    if (!pid || this.child!.exitCode !== null || this.child!.signalCode !== null) return false;
    for (const p of [...descendants(pid), pid]) {
      try {
        process.kill(p, signal);
      } catch {
        // already gone
      }
    }
    try {
      process.kill(-pid, signal);
    } catch {
      // no such group any more
    }
    return true;
  }


  /** restart kills the server and starts it again on the same port with the same data. */
  async restart(): Promise<void> {
    await this.kill();
    await this.start();
  }

  /** stop kills the server and removes its data. */
  async stop(): Promise<void> {
    await this.kill();
    started.delete(this);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** writeFile helper for servers that need a config file. */
export function writeConfig(dir: string, name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}
