/**
 * kubeBinary finds a binary built by infra/kube/build.sh (kube-apiserver, kubectl, etcd and
 * etcdctl of the current line, client-go's leader-elector), building them the first time.
 *
 * build.sh is the one place that names the versions and the cache folder; it is idempotent and
 * prints the folder at once when everything is built, so asking it is cheap. A machine without
 * Go, or a build that fails, gets one line saying what to run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BUILD = fileURLToPath(new URL('./build.sh', import.meta.url));
let bin: string | undefined;

/** kubeBinDir is the folder the current-line binaries are in (built on first use). */
export function kubeBinDir(): string {
  if (bin) return bin;
  let out: string;
  try {
    out = execFileSync('bash', [BUILD], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 60 * 60_000 });
  } catch (err) {
    throw new Error(`infra/kube/build.sh failed (${(err as Error).message.split('\n')[0]}): run it by hand to see why`);
  }
  const dir = out.trim().split('\n').pop() ?? '';
  if (!existsSync(join(dir, 'kube-apiserver'))) throw new Error(`infra/kube/build.sh printed ${JSON.stringify(dir)}, which holds no kube-apiserver`);
  return (bin = dir);
}

/** kubeBinary is the path of one of build.sh's binaries. */
export function kubeBinary(name: 'kube-apiserver' | 'kubectl' | 'etcd' | 'etcdctl' | 'leader-elector'): string {
  return join(kubeBinDir(), name);
}

/** kubeVersions reads what the built binaries say they are (for reports): e.g. v1.36.3 and 3.6.16. */
export function kubeVersions(): { kube: string; etcd: string } {
  const kube = execFileSync(kubeBinary('kube-apiserver'), ['--version'], { encoding: 'utf8' }).trim().replace(/^Kubernetes /, '');
  const etcd = /etcd Version: (\S+)/.exec(execFileSync(kubeBinary('etcd'), ['--version'], { encoding: 'utf8' }))?.[1] ?? 'unknown';
  return { kube, etcd };
}
