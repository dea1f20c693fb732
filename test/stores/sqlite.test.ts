import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { storeConformanceSuite } from '../../src/testing/index.js';
import { SqliteStore } from '../../src/stores/sqlite/index.js';

const dir = mkdtempSync(join(tmpdir(), 'baton-sqlite-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const path = join(dir, 'baton.db');
// Every handle is its own connection, as separate processes on one host would have.
await storeConformanceSuite({ name: 'sqlite', makeStore: async () => new SqliteStore(path) });
