/**
 * baton's OCI image (image/build.sh), built from this clone's packed package and run with podman:
 *
 *   - the image's user is numeric and not root (what Kubernetes' runAsNonRoot can verify), its
 *     entrypoint is `baton`, its version label the package's;
 *   - `baton --version` in it prints the package's version;
 *   - `baton run` in it, on the embedded SQLite store in the user's home, leads and runs a shell
 *     command as uid 10001 on the image's Node line, and exits with the command's code;
 *   - `baton serve` in it answers /readyz (the chart's readiness probe) and /leader, and on the
 *     SIGTERM of `podman stop` releases and exits 0.
 *
 * The build is cached under a key of the tarball and the rest (image/build.sh): a second run with
 * the same build is a few seconds. Skips only where the tools cannot be had (not root, or no apt
 * to install buildah, podman and mmdebstrap from); with apt and root, missing tools are a failure
 * naming scripts/install-servers.sh.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { freePort } from '../../infra/servers/index.js';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, TempDir, waitFor } from '../harness/cli.js';
import { NODE_LINE, buildImage, imageSkip as skip, ok, runFlags, sh } from './podman.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };

const dir = new TempDir();
const container = `baton-image-test-${process.pid}`;
let image = '';
after(() => {
  if (image) sh('podman', ['rm', '--force', '--ignore', container]);
  dir.remove();
});

describe(`the image, on Node ${NODE_LINE}`, { skip }, () => {
  before(() => {
    const built = buildImage(dir.path);
    image = built.image;
    console.log(built.summary);
  });

  it('runs as a numeric non-root user, with `baton` as its entrypoint and the package\'s version', () => {
    const config = JSON.parse(ok(sh('podman', ['image', 'inspect', image]), 'podman image inspect'))[0].Config as { User: string; Entrypoint: string[]; Labels: Record<string, string>; Env: string[] };
    assert.match(config.User, /^\d+(:\d+)?$/, 'numeric, or runAsNonRoot cannot verify it');
    assert.notEqual(Number(config.User.split(':')[0]), 0);
    assert.deepEqual(config.Entrypoint, ['baton']);
    assert.equal(config.Labels['org.opencontainers.image.version'], pkg.version);
  });

  it('`baton --version` prints the package\'s version', () => {
    const r = sh('podman', ['run', '--rm', ...runFlags(), image, '--version']);
    assert.equal(ok(r, 'podman run --version').trim(), pkg.version);
  });

  it('`baton run` leads on the embedded store and runs a shell command as uid 10001 on the image\'s Node line', () => {
    const r = sh('podman', ['run', '--rm', ...runFlags(), image, 'run', '--lock', 'image-test', '--',
      'sh', '-c', 'echo "uid $(id -u) term $BATON_TERM node $(node --version)"; exit 7']);
    assert.equal(r.status, 7, `baton run exits with its command's code:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^uid 10001 term 1 node v${NODE_LINE}\\.\\d+\\.\\d+$`, 'm'));
    assert.match(r.stderr, /elected leader of "image-test"/);
  });

  it('`baton serve` answers the readiness probe and /leader, and exits 0 on podman stop', async () => {
    const port = await freePort();
    ok(sh('podman', ['run', '--detach', '--name', container, '--network', 'host', ...runFlags(), image, 'serve', '--lock', 'image-serve', '--listen', `127.0.0.1:${port}`]), 'podman run --detach serve');
    await waitFor('/readyz to answer 200', async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, 30_000, 100);
    const leader = await waitFor('this instance to lead', async () => {
      const body = (await (await fetch(`http://127.0.0.1:${port}/leader`)).json()) as { isSelf: boolean; term: number; holder: string };
      return body.isSelf && body;
    }, 10_000, 100);
    assert.equal(leader.term, 1);
    ok(sh('podman', ['stop', '--time', '20', container]), 'podman stop');
    const code = ok(sh('podman', ['inspect', '--format', '{{.State.ExitCode}}', container]), 'podman inspect').trim();
    const logs = sh('podman', ['logs', container]);
    assert.equal(code, '0', logs.stderr);
    assert.match(logs.stderr, /releas/i, 'it released the lease on SIGTERM');
  });
});
