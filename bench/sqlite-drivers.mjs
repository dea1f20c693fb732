// SQLite store round trips on the running Node line with the driver BATON_SQLITE_DRIVER picks
// (node or better-sqlite3): 5,000 reads and 5,000 renewals (each a WAL commit with
// synchronous=FULL) of one lease. Needs `npm run build`. See docs/PERFORMANCE.md.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const { SqliteStore } = await import(new URL('../dist/stores/sqlite/index.js', import.meta.url).href);
const store = new SqliteStore(join(mkdtempSync(join(tmpdir(), 'rtt-')), 'rtt.db'));
const w = (holder) => ({ holder, newTerm: true, leaseDurationMs: 15000, acquiredAt: Date.now(), renewedAt: Date.now(), transitions: 1, stepDownRequested: false, metadata: Object.freeze({ host: 'x' }) });
let rec = (await store.write('l', null, w('a'))).record;
const time = async (n, f) => { const t = []; for (let i = 0; i < n; i++) { const s = performance.now(); await f(); t.push(performance.now() - s); } t.sort((a, b) => a - b); return { p50: t[n >> 1].toFixed(3), p99: t[Math.floor(n * 0.99)].toFixed(3) }; };
for (let i = 0; i < 500; i++) await store.read('l');
const read = await time(5000, () => store.read('l'));
const renew = await time(5000, async () => { rec = (await store.write('l', rec.revision, { ...w('a'), newTerm: false })).record; });
console.log(JSON.stringify({ node: process.versions.node, driver: process.env.BATON_SQLITE_DRIVER, read, renew }));
await store.close();
