import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { LeaderElector } from '../../../src/core/elector.js';
import { ZooKeeperStore } from '../../../src/stores/zookeeper/index.js';
import { fourLetter, zooKeeperEnsemble } from '../../../infra/servers/index.js';
import { waitFor } from '../../harness/cli.js';

// Issue 14, "when the store itself is a cluster": a three-member ZooKeeper ensemble on loopback.
// The member the leader is connected to is killed (kill -9). The leader either keeps leading
// through another member (its session moves) or steps down by its own deadline; either way a
// leader is in place again within the bound, and no two leaderships overlap.
const members = await zooKeeperEnsemble(3);
after(() => Promise.all(members.map((m) => m.stop())));

const TIMING = { leaseDurationMs: 2000, renewDeadlineMs: 1400, retryPeriodMs: 200 };

test('zookeeper ensemble: killing the member the leader is connected to keeps one leader at a time, and a leader again within the bound', async () => {
  const url = members[0]!.url('/ensemble');
  const stores = [ZooKeeperStore.fromUrl(url), ZooKeeperStore.fromUrl(url)];
  const spans: { who: string; term: number; from: number; to?: number }[] = [];
  const electors = ['a', 'b'].map((id, i) => {
    const e = new LeaderElector({ store: stores[i]!, lock: 'member-kill', identity: id, ...TIMING });
    e.on('storeError', () => {});
    e.on('elected', ({ term }) => spans.push({ who: id, term, from: performance.now() }));
    e.on('stopped', () => {
      const open = [...spans].reverse().find((s) => s.who === id && s.to === undefined);
      if (open) open.to = performance.now();
    });
    return e;
  });
  after(async () => {
    await Promise.all(electors.map((e) => e.stop().catch(() => {})));
    await Promise.all(stores.map((s) => s.close()));
  });
  for (const e of electors) e.start();
  const leading = () => spans.filter((s) => s.to === undefined);
  await waitFor('a first leader', () => leading().length === 1 && leading()[0], 20_000);
  // Rounds 1–2 kill the member the leader is connected to then; round 3 kills the ensemble's
  // own leader (a new quorum leader must be elected before any write goes through). Each
  // victim is started again after its round.
  for (let round = 1; round <= 3; round++) {
    await new Promise((r) => setTimeout(r, 1000));
    const first = leading()[0]!;
    const leaderStore = stores[first.who === 'a' ? 0 : 1]!;

    // Find the member that holds the leader's connection(s): `stat` lists each member's clients.
    const ports = leaderStore.localPorts();
    assert.ok(ports.length > 0, 'the leader has a live session');
    const stats = await Promise.all(members.map((m) => fourLetter(m.port, 'stat').catch(() => '')));
    const modes = await Promise.all(members.map((m) => m.mode()));
    const victim = round === 3 ? members[modes.indexOf('leader')] : members.find((_, i) => ports.some((p) => stats[i]!.includes(`127.0.0.1:${p}[`)));
    assert.ok(victim, `no member to kill in round ${round} (ports ${ports.join(',')}, modes ${modes.join(',')})`);
    const role = await victim.mode();
    const killedAt = performance.now();
    await victim.kill();

    // A leader again (the same one, or the standby), holding steadily for several renewals.
    const bound = TIMING.leaseDurationMs * 3 + 10_000;
    await waitFor(`a leader after kill ${round}`, async () => {
      const l = leading();
      if (l.length !== 1) return false;
      const seen = await stores[l[0]!.who === 'a' ? 1 : 0]!.read('member-kill').catch(() => null);
      return seen?.holder === l[0]!.who && seen.term === l[0]!.term && performance.now() - l[0]!.from > 4 * TIMING.retryPeriodMs;
    }, bound, 50);
    const now = leading()[0]!;
    const kept = now === first;
    process.stdout.write(`# zookeeper ensemble, round ${round}: killed the ${role} member${round === 3 ? '' : ' the leader used'}; ${kept ? 'the leader kept leading through another member' : `leader ${first.who} stepped down at +${((first.to ?? 0) - killedAt).toFixed(0)} ms, ${now.who} leads from +${(now.from - killedAt).toFixed(0)} ms`}\n`);
    await victim.start();
  }

  // No overlap; terms only grow.
  const sorted = [...spans].sort((x, y) => x.from - y.from);
  for (let i = 1; i < sorted.length; i++) {
    const [p, q] = [sorted[i - 1]!, sorted[i]!];
    assert.ok(p.to !== undefined && q.from > p.to, `${q.who} (term ${q.term}) elected while ${p.who} (term ${p.term}) led`);
    assert.ok(q.term > p.term, `terms only grow: ${p.term} then ${q.term}`);
  }
});
