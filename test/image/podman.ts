/**
 * Helpers of the image tests: whether the tools are here, building the image once per test file
 * (image/build.sh caches it by a key of the packed package), and the flags `podman run` needs.
 */
import assert from 'node:assert/strict';
import { execFile, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../harness/cli.js';

/** NODE_LINE is the Node line image/build.sh puts in the image. */
export const NODE_LINE = process.env.BATON_IMAGE_NODE_LINE ?? '24';

function onPath(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
}

/** MISSING lists the image tools not installed (a failure where apt and root could install them). */
export const MISSING = ['buildah', 'podman', 'mmdebstrap'].filter((t) => !onPath(t));
const root = process.getuid?.() === 0;

/**
 * imageSkip is why the image cannot be built or run on this machine at all (a test's `skip`),
 * or false. Only where the tools cannot be had: not root, or no apt to install them from.
 */
export const imageSkip: string | false = root && existsSync('/usr/bin/apt-get') ? false
  : !root ? 'the image is built as root (its layers keep the owners root and uid 10001); this test runs as another user'
  : MISSING.length > 0 ? `${MISSING.join(', ')} not installed and no apt-get to install them from` : false;

/** sh runs a command in the repository's root and answers its result (never throws). */
export function sh(cmd: string, args: string[], timeoutMs = 120_000): SpawnSyncReturns<string> {
  return spawnSync(cmd, args, { encoding: 'utf8', timeout: timeoutMs, cwd: ROOT });
}

/** shAsync is sh without blocking the event loop (for servers this process serves or proxies). */
export function shAsync(cmd: string, args: string[], timeoutMs = 120_000): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { encoding: 'utf8', timeout: timeoutMs, cwd: ROOT, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const code = (err as { code?: unknown } | null)?.code;
      resolve({ status: err ? (typeof code === 'number' ? code : null) : 0, stdout, stderr });
    });
  });
}

/** ok asserts a command succeeded and answers its stdout. */
export function ok(r: SpawnSyncReturns<string>, what: string): string {
  assert.equal(r.status, 0, `${what} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`.slice(-4000));
  return r.stdout;
}

/**
 * buildImage packs this clone (dist is built by the test command) into `dir` and builds the image
 * from the tarball; answers its reference and build.sh's summary line.
 */
export function buildImage(dir: string): { image: string; summary: string } {
  assert.deepEqual(MISSING, [], `${MISSING.join(', ')} not installed: run bash scripts/install-servers.sh (as root)`);
  const packed = ok(sh('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir]), 'npm pack').trim().split('\n').pop()!;
  const built = sh('bash', [join(ROOT, 'image/build.sh'), join(dir, packed)], 15 * 60_000);
  const image = ok(built, 'image/build.sh').trim().split('\n').pop()!;
  return { image, summary: built.stderr.trim().split('\n').pop() ?? '' };
}

/**
 * runFlags: what `podman run` needs to start a container on machines like CI's. runc rather than
 * crun, which refuses a hybrid cgroup v1/v2 host; limits no higher than this process's own, since
 * a sandbox without CAP_SYS_RESOURCE cannot raise them to podman's defaults (runc and crun then
 * fail with "setrlimit … operation not permitted"). Harmless where neither is needed.
 */
export function runFlags(): string[] {
  const limits = readFileSync('/proc/self/limits', 'utf8');
  const nofile = /^Max open files\s+\S+\s+(\S+)/m.exec(limits)?.[1];
  return [
    ...(onPath('runc') ? ['--runtime', 'runc'] : []),
    ...(nofile && nofile !== 'unlimited' ? ['--ulimit', `nofile=${nofile}:${nofile}`] : []),
    '--ulimit', 'nproc=4096:4096',
  ];
}
