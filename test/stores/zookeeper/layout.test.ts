import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ZkLayout, latchPrefix, parseRevision, participants } from '../../../src/stores/zookeeper/layout.js';
import { parseZkUrl } from '../../../src/stores/zookeeper/config.js';

test('participants: ordered by the appended sequence across Curator latch, Curator lock and kazoo names; other children ignored', () => {
  const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e';
  const children = [
    `${latchPrefix(uuid)}0000000012`,
    '_c_1b4e28ba-2fa1-11d2-883f-0016d3cca427-lock-0000000003',
    'e1b2c3__lock__0000000007',
    'latch-0000000010',
    'not-a-candidate',
    'leader',
    `${latchPrefix(uuid)}000000001`, // nine digits: not a ZooKeeper sequence
  ];
  const line = participants(children);
  assert.deepEqual(line.map((p) => p.seq), [3, 7, 10, 12]);
  assert.equal(line[3]!.uuid, uuid);
  assert.equal(line[0]!.uuid, '1b4e28ba-2fa1-11d2-883f-0016d3cca427');
  assert.equal(line[1]!.uuid, undefined);
});

test('layout: a lock is one znode under the root (a / becomes %2F), records and the ledger live under _baton', () => {
  const l = new ZkLayout('/baton');
  assert.equal(l.lockDir('jobs/nightly'), '/baton/jobs%2Fnightly');
  assert.equal(l.lockOfDir('jobs%2Fnightly'), 'jobs/nightly');
  assert.equal(l.lockOfDir('_baton'), undefined);
  assert.equal(l.recordPath('a/b', 'u'), '/baton/_baton/records/a%2Fb/u');
  assert.equal(l.ledgerPath('cron/x y'), '/baton/_baton/ledger/cron%2Fx%20y');
});

test('revisions: czxid:version of ours parse; a foreign entry (no record) or a released one never matches', () => {
  assert.deepEqual(parseRevision('4294967298:3'), { czxid: 4294967298, version: 3 });
  assert.equal(parseRevision('12:-'), undefined);
  assert.equal(parseRevision('12:released'), undefined);
});

test('zk URLs: hosts, default port and root, timeout; bad ones refused with a one-line reason', () => {
  assert.deepEqual(parseZkUrl('zk://a,b:2182/x/y?timeout=500ms'), { connectString: 'a:2181,b:2182', root: '/x/y', callTimeoutMs: 500 });
  assert.equal(parseZkUrl('zk://h').root, '/baton');
  for (const [url, why] of [
    ['zk://h/', /must name a znode/],
    ['zk://h/a/', /trailing slash/],
    ['zk://h/a/../b', /"\.\."|\.\./],
    ['zk://u:p@h/x', /user info/],
    ['zk://h/x?timeout=10ms', /too short/],
    ['zk://h/x?timeout=fast', /timeout/],
  ] as const) {
    assert.throws(() => parseZkUrl(url), (err: Error) => why.test(err.message) && !err.message.includes('\n'), url);
  }
});
