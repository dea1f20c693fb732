// One instance of a fleet running a real node-cron 4 `distributed` task every second through
// baton's RunCoordinator (from the build, as the package ships it). Each fire it runs, and each
// fire node-cron reports missed in this process, is appended as one JSON line to FIRE_LOG.
// Environment: BATON_DIST (the build folder), STORE (URL), MISSED (catch-up | skip), FIRE_LOG.
import { appendFileSync } from 'node:fs';
import cron from 'node-cron';

const { runCoordinator } = await import(`${process.env.BATON_DIST}/node-cron/index.js`);
const log = (entry) => appendFileSync(process.env.FIRE_LOG, `${JSON.stringify({ ...entry, pid: process.pid, at: Date.now() })}\n`);
const coordinator = runCoordinator({
  store: process.env.STORE,
  missed: process.env.MISSED,
  identity: `member-${process.pid}`,
  leaseDurationMs: 2000,
  renewDeadlineMs: 1500,
  retryPeriodMs: 250,
});
const task = cron.schedule(
  '* * * * * *',
  (ctx) => log({ ev: 'ran', slot: ctx.date.toISOString(), term: coordinator.claimOf(ctx)?.term ?? null }),
  { name: 'tick', distributed: true, runCoordinator: coordinator, distributedLease: 10_000 },
);
task.on('execution:missed', (ctx) => log({ ev: 'missed', slot: ctx.date.toISOString() }));
process.once('SIGTERM', async () => {
  await task.stop();
  await coordinator.close();
  process.exit(0);
});
process.stdout.write('ready\n');
