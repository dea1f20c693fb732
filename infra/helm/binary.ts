/**
 * helmBinary finds the helm built by infra/helm/build.sh (from the Go module proxy), building it
 * the first time (about 3 minutes on a 2-core machine; nothing once built).
 *
 * build.sh is the one place that names helm's version and the cache folder. It exits 69 when Go
 * is not installed: then helmBinary answers `{ missing }` with the reason, for a test to skip on —
 * without Go, helm cannot be had on this machine (no release download is reachable). A build that
 * fails for any other reason throws.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const BUILD = fileURLToPath(new URL('./build.sh', import.meta.url));
let found: { path: string } | { missing: string } | undefined;

/** helmBinary is `{ path }` of the built helm, or `{ missing }` saying why it cannot be built here. */
export function helmBinary(): { path: string } | { missing: string } {
  if (found) return found;
  const r = spawnSync('bash', [BUILD], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30 * 60_000 });
  if (r.status === 69) return (found = { missing: r.stderr.trim() });
  if (r.status !== 0) throw new Error(`infra/helm/build.sh failed (${r.status ?? r.signal}): ${r.stderr.trim().split('\n').slice(-10).join('\n')}`);
  const path = r.stdout.trim().split('\n').pop() ?? '';
  if (!existsSync(path)) throw new Error(`infra/helm/build.sh printed ${JSON.stringify(path)}, which is not a file`);
  return (found = { path });
}
