// The public conformance suite on SQLite: every handle is its own connection, as separate
// processes on one host would have. An operator's DELETE of a lease row is the fault it can have
// (no server to kill; a missing or unwritable path is a configuration error, not an outage).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { openDatabase } from '../../../src/stores/sqlite/driver.js';
import { SqliteStore } from '../../../src/stores/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-sqlite-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const path = join(dir, 'baton.db');

await storeConformanceSuite({
  name: 'sqlite',
  makeStore: async () => new SqliteStore(path),
  faults: {
    async deleteRecord(lock) {
      // Through the same driver the store picks (node:sqlite or better-sqlite3).
      const db = openDatabase(path, 5_000);
      try {
        db.prepare('DELETE FROM baton_leases WHERE lock = ?').run(lock);
      } finally {
        db.close();
      }
    },
  },
});
