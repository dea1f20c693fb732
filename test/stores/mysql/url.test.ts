// The mysql:// URL: a pure check, no server.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseMysqlUrl } from '../../../src/stores/mysql/config.js';
import { likePrefix } from '../../../src/stores/mysql/sql.js';
import { InvalidConfigError } from '../../../src/core/errors.js';

describe('mysql URL', () => {
  it('reads host, port, credentials, database, table, timeout and pool size; mariadb:// is the same', () => {
    const c = parseMysqlUrl('mysql://u:p%40ss@db.example:3307/app?table=locks&timeout=500ms&pool_max=8');
    assert.equal(c.host, 'db.example');
    assert.equal(c.port, 3307);
    assert.equal(c.user, 'u');
    assert.equal(c.password, 'p@ss');
    assert.equal(c.database, 'app');
    assert.equal(c.table, 'locks');
    assert.equal(c.timeoutMs, 500);
    assert.equal(c.poolMax, 8);
    assert.ok(!c.label.includes('p%40ss'));
    assert.equal(parseMysqlUrl('mariadb://h/app').port, 3306);
    assert.equal(parseMysqlUrl('mariadb://h/app').table, 'baton_leases');
  });

  it('refuses what cannot work with one line naming it', () => {
    const bad: [string, RegExp][] = [
      ['mysql://h', /names no database/],
      ['mysql://h/app?table=a-b', /table "a-b"/],
      ['mysql://h/app?table=1x', /table "1x"/],
      ['mysql://h/app?colour=red', /unknown URL option "colour"/],
      ['mysql://h/app?timeout=soon', /timeout/],
      ['mysql://h/app?pool_max=0', /pool_max "0"/],
      ['mysql://h/a/b', /database "a\/b"/],
    ];
    for (const [url, names] of bad) {
      assert.throws(() => parseMysqlUrl(url), (e: Error) => e instanceof InvalidConfigError && names.test(e.message) && !e.message.includes('\n'), url);
    }
  });

  it('escapes LIKE wildcards in listing prefixes', () => {
    assert.equal(likePrefix('ledger/a_b%c!'), 'ledger/a!_b!%c!!%');
  });
});
