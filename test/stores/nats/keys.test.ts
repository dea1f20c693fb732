// The NATS key map and URL parsing: pure functions, no server.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fromNatsKey, listFilter, toNatsKey } from '../../../src/stores/nats/keys.js';
import { parseNatsUrl } from '../../../src/stores/nats/config.js';
import { InvalidConfigError } from '../../../src/core/errors.js';

describe('nats keys', () => {
  it('maps kit keys one-to-one onto KV keys of [-/_=.A-Za-z0-9], family as its own token', () => {
    const cases: [string, string][] = [
      ['lease/web-1', 'lease.web-1'],
      ['term/a.b', 'term.a=2Eb'],
      ['ledger/cron/job:2026', 'ledger.cron/job=3A2026'],
      ['ledger/x=y', 'ledger.x=3Dy'],
      ['lease/é', 'lease.=C3=A9'],
      ['ledger/', 'ledger.='],
    ];
    for (const [kit, nats] of cases) {
      assert.equal(toNatsKey(kit), nats);
      assert.match(nats, /^[-/_=.A-Za-z0-9]+$/);
      assert.equal(fromNatsKey(nats), kit);
    }
    // Distinct keys that differ only in escaped characters stay distinct.
    assert.notEqual(toNatsKey('lease/a.b'), toNatsKey('lease/a=2Eb'));
    assert.equal(fromNatsKey(toNatsKey('lease/a=2Eb')), 'lease/a=2Eb');
  });

  it('filters listings by family on the server', () => {
    assert.equal(listFilter('lease/'), 'lease.*');
    assert.equal(listFilter('ledger/cron/'), 'ledger.*');
    assert.equal(listFilter(''), '>');
  });
});

describe('nats URL', () => {
  it('reads servers, credentials, bucket, timeout and replicas', () => {
    const c = parseNatsUrl('nats://u:p%40ss@h1:4223,h2?bucket=locks&timeout=500ms&replicas=3');
    assert.deepEqual(c.servers, [{ host: 'h1', port: 4223 }, { host: 'h2', port: 4222 }]);
    assert.equal(c.user, 'u');
    assert.equal(c.pass, 'p@ss');
    assert.equal(c.bucket, 'locks');
    assert.equal(c.timeoutMs, 500);
    assert.equal(c.replicas, 3);
    assert.ok(!c.label.includes('p%40ss'));
    assert.equal(parseNatsUrl('nats://tok@h').token, 'tok');
    assert.equal(parseNatsUrl('nats://h').bucket, 'baton');
  });

  it('refuses bad buckets, options, ports and paths with one line naming them', () => {
    const bad: [string, RegExp][] = [
      ['nats://h?bucket=a.b', /bucket "a\.b"/],
      ['nats://h?colour=red', /unknown URL option "colour"/],
      ['nats://h:99999', /port "99999"/],
      ['nats://h/locks', /path/],
      ['nats://h?timeout=soon', /timeout/],
      ['nats://h?replicas=9', /replicas "9"/],
      ['nats://', /no host/],
    ];
    for (const [url, names] of bad) {
      assert.throws(() => parseNatsUrl(url), (e: Error) => e instanceof InvalidConfigError && names.test(e.message) && !e.message.includes('\n'), url);
    }
  });
});
