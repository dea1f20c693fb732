import { after, test } from 'node:test';
import { runHungScenario } from '../../harness/hung-scenario.js';
import { RedisServer } from '../../../infra/servers/index.js';

// Three real `baton run --progress-timeout` processes against a real redis-server: the leader's
// child, a systemd-style program, is SIGSTOPped; it is stopped and another instance leads
// (test/harness/hung-scenario.ts asserts the facts; needs the build: bin/baton.js).
const server = await new RedisServer().start();
after(() => server.stop());

test('redis: a hung child (SIGSTOP, no more WATCHDOG=1) is stopped and another instance leads', async () => {
  const r = await runHungScenario({ storeUrl: server.url, name: 'redis', mode: 'notify' });
  process.stdout.write(`# redis notify: SIGSTOP of the leader's child → next child started in ${r.takeoverMs.toFixed(0)} ms\n`);
});
