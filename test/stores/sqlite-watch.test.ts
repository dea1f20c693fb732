/**
 * SqliteStore's change notification with many watched locks, as a shard group member has: when
 * another connection (another process, to SQLite) commits, exactly the watched locks whose
 * record changed are delivered — a renewal, an acquisition, a record created where there was
 * none — and the others are not. The store reads every watched lock's revision in one statement
 * per foreign commit (the bench's shard section counts the statements); this checks that the one
 * statement still tells changed from unchanged.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { SqliteStore } from '../../src/stores/sqlite/index.js';
import type { LeaseRecord, LeaseWrite } from '../../src/core/store.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-sqlite-watch-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const write = (holder: string, newTerm: boolean): LeaseWrite => ({
  holder,
  newTerm,
  leaseDurationMs: 5000,
  acquiredAt: Date.now(),
  renewedAt: Date.now(),
  transitions: 1,
  stepDownRequested: false,
  metadata: {},
});

test('sqlite: of 300 watched locks, only those another connection changed are delivered', async () => {
  const path = join(dir, 'watch.db');
  const watcher = new SqliteStore(path, { pollIntervalMs: 20 });
  const writer = new SqliteStore(path);
  try {
    const records = new Map<string, LeaseRecord>();
    for (let i = 0; i < 300; i++) {
      const r = await writer.write(`w/${i}`, null, write('a', true));
      assert.ok(r.ok);
      records.set(`w/${i}`, r.record);
    }
    const seen: [string, string | null][] = [];
    const offs = [...records.keys(), 'w/absent'].map((lock) => watcher.watch!(lock, (rec) => seen.push([lock, rec === undefined ? 'wake' : rec === null ? null : rec.holder])));
    // Let the watcher settle on the current data_version before anything changes.
    await new Promise((r) => setTimeout(r, 100));
    seen.length = 0;
    const renewed = await writer.write('w/7', records.get('w/7')!.revision, write('a', false));
    const taken = await writer.write('w/250', records.get('w/250')!.revision, write('b', true));
    const created = await writer.write('w/absent', null, write('c', true));
    assert.ok(renewed.ok && taken.ok && created.ok);
    const until = Date.now() + 5000;
    while (seen.length < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100)); // and nothing else arrives
    assert.deepEqual(seen.sort(), [['w/250', 'b'], ['w/7', 'a'], ['w/absent', 'c']]);
    offs.forEach((off) => off());
  } finally {
    await watcher.close();
    await writer.close();
  }
});
