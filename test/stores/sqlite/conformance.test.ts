// The public conformance suite on SQLite: every handle is its own connection, as separate
// processes on one host would have. An operator's DELETE of a lease row is the fault it can have
// (no server to kill; a missing or unwritable path is a configuration error, not an outage).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { after } from 'node:test';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { SqliteStore } from '../../../src/stores/sqlite/index.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof import('better-sqlite3');
const dir = mkdtempSync(join(tmpdir(), 'baton-sqlite-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const path = join(dir, 'baton.db');

await storeConformanceSuite({
  name: 'sqlite',
  makeStore: async () => new SqliteStore(path),
  faults: {
    async deleteRecord(lock) {
      const db = new Database(path, { timeout: 5_000 });
      try {
        db.prepare('DELETE FROM baton_leases WHERE lock = ?').run(lock);
      } finally {
        db.close();
      }
    },
  },
});
