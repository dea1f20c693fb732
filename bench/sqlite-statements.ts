/**
 * sqliteStatementCounter counts the SQL statements this process runs through better-sqlite3,
 * by wrapping the shared Statement prototype's run/get/all/iterate. SQLite has no server whose
 * counters we could read; this is the closest equivalent: every statement a store executes
 * against the database file, including the store's own background `PRAGMA data_version`
 * polls. Transaction BEGIN/COMMIT are not statements here (better-sqlite3 issues them natively).
 */
import { createRequire } from 'node:module';
import type { Counts } from './counters.js';

// Counted by the statement's own text; the text is shortened into a kind only when a snapshot
// is taken, so the counter adds a Map lookup per statement, not a regex (it runs inside the
// child whose CPU is measured).
const counts = new Map<string, number>();
let installed = false;

/** installSqliteStatementCounter patches better-sqlite3 once in this process. */
export function installSqliteStatementCounter(): void {
  if (installed) return;
  installed = true;
  const Sqlite = createRequire(import.meta.url)('better-sqlite3') as new (path: string) => { prepare(sql: string): object; close(): void };
  const db = new Sqlite(':memory:');
  const proto = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<string, unknown>;
  db.close();
  for (const method of ['run', 'get', 'all', 'iterate'] as const) {
    const original = proto[method] as (this: { source: string }, ...args: unknown[]) => unknown;
    proto[method] = function (this: { source: string }, ...args: unknown[]) {
      counts.set(this.source, (counts.get(this.source) ?? 0) + 1);
      return original.apply(this, args);
    };
  }
}

/** sqliteStatementSnapshot copies the per-statement counts so far. */
export function sqliteStatementSnapshot(): Counts {
  const out: Counts = new Map();
  for (const [source, n] of counts) {
    const kind = source.replace(/\s+/g, ' ').trim().slice(0, 60);
    out.set(kind, (out.get(kind) ?? 0) + n);
  }
  return out;
}
