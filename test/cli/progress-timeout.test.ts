import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { BatonProcess, TempDir, cleanEnv, lines, pidAlive, readChildLog, runCli, waitFor } from '../harness/cli.js';
import { CHILD_PY, HUNG_TIMING, assertBadWatchdogFlags, runHungScenario } from '../harness/hung-scenario.js';
import { NotifySocket, type NotifyMessage } from '../../src/cli/notify-socket.js';

// `baton run --progress-timeout` and `--health-cmd` (issue 28, docs/watchdog.md): real baton
// processes on the embedded SQLite store, real python3 children that report progress the
// systemd way. Bounds are generous (a loaded 2-core machine); the facts and their order are
// what is asserted.
const dir = new TempDir();
after(() => dir.remove());

describe('baton run --progress-timeout (SQLite)', () => {
  test('a SIGSTOPped child that sent WATCHDOG=1 on NOTIFY_SOCKET: stopped, another instance leads', async () => {
    const r = await runHungScenario({ storeUrl: dir.sqlite('notify.db'), name: 'sqlite', mode: 'notify' });
    process.stdout.write(`# sqlite notify: SIGSTOP of the leader's child → next child started in ${r.takeoverMs.toFixed(0)} ms (progress timeout ${HUNG_TIMING.progressMs} ms)\n`);
  });

  test('a SIGSTOPped child that touched BATON_HEARTBEAT_FILE: stopped, another instance leads', async () => {
    const r = await runHungScenario({ storeUrl: dir.sqlite('file.db'), name: 'sqlite', mode: 'file' });
    process.stdout.write(`# sqlite file: SIGSTOP of the leader's child → next child started in ${r.takeoverMs.toFixed(0)} ms\n`);
  });

  test('a health command that starts failing: the leader stops its child, releases and exits 80; the standby leads', async () => {
    const t = HUNG_TIMING;
    const home = new TempDir();
    const log = home.join('children.log');
    const failFlag = home.join('downstream-down');
    const env = cleanEnv(home.path, { CHILD_LOG: log, CHILD_MODE: 'none' });
    const store = dir.sqlite('health.db');
    const batons = ['h1', 'h2'].map((id) => new BatonProcess(['run', '--store', store, '--lock', 'healthy', '--identity', id,
      '--lease-duration', `${t.leaseMs}ms`, '--renew-deadline', `${t.renewDeadlineMs}ms`, '--retry-period', `${t.retryMs}ms`,
      '--health-cmd', `test ! -e "${failFlag}"`, '--health-interval', '300ms', '--health-failures', '3', '--', 'python3', CHILD_PY], { env }));
    try {
      const starts = () => readChildLog(log).filter((l) => l.kind === 'start');
      const first = await waitFor('the first child', () => starts()[0], 30_000);
      const firstBaton = batons.find((b) => b.stderr.includes(`as ${first.identity} `))!;
      // Passing probes keep it leading.
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(starts().length, 1, 'a healthy leader keeps leading');
      writeFileSync(failFlag, '');
      const r = await firstBaton.waitForExit(30_000);
      assert.equal(r.code, 80, r.stderr);
      const hung = lines(r.stderr).filter((l) => l.includes('is hung'));
      assert.equal(hung.length, 1, r.stderr);
      assert.match(hung[0]!, /the health command failed 3 times in a row \(exit 1\)/);
      assert.ok(!pidAlive(first.pid), 'the child is dead');
      // The flag is still there, but the other instance has no failures yet: it leads (and will
      // step down in turn; nobody restarts the first one here).
      const second = await waitFor('the standby to start its child', () => starts().find((l) => l.identity !== first.identity), 15_000);
      assert.ok(second.term > first.term);
      const all = readChildLog(log);
      const stopAt = all.findIndex((l) => l.kind === 'stop' && l.pid === first.pid);
      assert.ok(stopAt >= 0 && stopAt < all.findIndex((l) => l.kind === 'start' && l.pid === second.pid), 'the first child stopped before the second started');
    } finally {
      for (const b of batons) await b.kill();
      home.remove();
    }
  });

  test('without --keep-running a hung child ends baton with 80; status says why', async () => {
    const home = new TempDir();
    const env = cleanEnv(home.path, { CHILD_LOG: home.join('log'), CHILD_MODE: 'none' });
    const store = dir.sqlite('exit.db');
    try {
      const r = await runCli(['run', '--store', store, '--lock', 'silent', '--identity', 'quiet-one', '--progress-timeout', '500ms', '--', 'python3', CHILD_PY], { env, timeoutMs: 30_000 });
      assert.equal(r.code, 80, r.stderr);
      assert.match(r.stderr, /is hung: no heartbeat within the progress timeout \(500ms\); stopping python3 and stepping down/);
      const s = await runCli(['status', '--store', store, '--lock', 'silent'], { env });
      assert.match(s.stdout, /silent: free \(last term 1;/);
      assert.match(s.stdout, /last step-down: quiet-one \(term 1\) at \S+: hung \(no heartbeat within the progress timeout \(500ms\)\)/);
    } finally {
      home.remove();
    }
  });

  test('bad flags: one line, 64 or 78, no directory or socket made', () => assertBadWatchdogFlags((store) => ['run', '--store', store, '--lock', 'x']));

  test('under systemd\'s watchdog, baton answers its own NOTIFY_SOCKET: READY=1, then WATCHDOG=1 every half WATCHDOG_USEC', async () => {
    const home = new TempDir();
    // The receiving end plays systemd: the same datagram socket the children talk to.
    const heard: NotifyMessage[] = [];
    const systemd = await NotifySocket.open(home.join('systemd-notify'), (m) => heard.push(m));
    assert.ok(systemd, 'python3 serves the socket');
    try {
      const env = cleanEnv(home.path, { NOTIFY_SOCKET: systemd.path, WATCHDOG_USEC: '400000', CHILD_LOG: home.join('log'), CHILD_MODE: 'none' });
      const r = await runCli(['run', '--store', home.sqlite(), '--lock', 'sd', '--', 'sleep', '2'], { env, timeoutMs: 30_000 });
      assert.equal(r.code, 0, r.stderr);
      await waitFor('the last datagram', () => heard.some((m) => m.get('STOPPING') === '1'), 5_000);
      assert.equal(heard[0]?.get('READY'), '1');
      const pings = heard.filter((m) => m.get('WATCHDOG') === '1').length;
      assert.ok(pings >= 4, `WATCHDOG=1 every 200 ms over 2 s: ${pings}`);
      // WATCHDOG_PID naming another process: the watchdog is not baton's; it sends nothing.
      heard.length = 0;
      const other = await runCli(['run', '--store', home.sqlite(), '--lock', 'sd', '--', 'true'], { env: { ...env, WATCHDOG_PID: '1' } });
      assert.equal(other.code, 0, other.stderr);
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(heard, []);
    } finally {
      systemd.close();
      home.remove();
    }
  });

  test('without python3 for the socket: one warning, no NOTIFY_SOCKET, the heartbeat file still keeps the command leading', async () => {
    const home = new TempDir();
    const log = home.join('log');
    const env = cleanEnv(home.path, { BATON_PYTHON: home.join('no-such-python'), CHILD_LOG: log, CHILD_MODE: 'file', CHILD_EVERY: '0.1' });
    // 3 s: a python3 child on a loaded machine can take over a second to write its first heartbeat.
    const p = new BatonProcess(['run', '--store', home.sqlite(), '--lock', 'nopy', '--progress-timeout', '3s', '--', 'python3', CHILD_PY], { env });
    try {
      await waitFor('the child', () => readChildLog(log)[0], 20_000);
      await new Promise((r) => setTimeout(r, 6500)); // over twice the timeout: heartbeats through the file only
      assert.equal(p.done, false, p.stderr);
      const warned = lines(p.stderr).filter((l) => l.includes('no NOTIFY_SOCKET: python3 could not be run'));
      assert.equal(warned.length, 1, p.stderr);
      assert.ok(!p.stderr.includes('is hung'), p.stderr);
    } finally {
      await p.kill();
      home.remove();
    }
  });
});
