/**
 * Causal reads on a MariaDB Galera cluster.
 *
 * A Galera node applies the other nodes' writes a moment after they commit, so a plain SELECT
 * or UPDATE on one node can run against rows older than a write another node has already
 * committed. Safety does not depend on it: every write of the store is a compare-and-set, and
 * Galera certifies conflicting writes in one cluster-wide order, so a write built on a stale
 * read fails certification (ER_LOCK_DEADLOCK) or, retried by the server, matches no row — a
 * lost race either way; and a node commits its own write only after every earlier one, so what
 * a handle reads after its own write is at least that fresh. A stale read can only delay.
 *
 * It does cost liveness when one handle's statements reach different nodes (a pool behind a
 * load balancer): a leader that renewed through one node and renews again through another
 * that has not applied the first renewal finds no row at its revision and steps down for
 * nothing; a standby reads a record older than the one a node it used a moment ago returned.
 * So on Galera every statement asks for a causality wait (wsrep_sync_wait bits 1 READ and
 * 2 UPDATE/DELETE, added to the server's own): the node first applies every write committed
 * in the cluster before the statement began. INSERT needs no wait: one into a key that exists
 * elsewhere but not yet here fails certification, a lost create.
 *
 * The wait is asked per statement (`SET STATEMENT … FOR`), so a handle never changes a pooled
 * session's settings. That syntax is MariaDB's; on another server, or with wsrep off (MariaDB's
 * Debian build has the wsrep variables even without a cluster), nothing is added.
 */
import type { Pool } from 'mysql2/promise';
import { withTimeout } from '../kit/timeout.js';

/** SYNC_WAIT_BITS: READ (1) and UPDATE/DELETE (2). */
export const SYNC_WAIT_BITS = 3;

/**
 * galeraSyncWait returns the wsrep_sync_wait value the store's statements should carry: the
 * server's own value with SYNC_WAIT_BITS added on a MariaDB node with wsrep on, otherwise 0
 * (add nothing). One query (`SHOW VARIABLES`, which every MySQL and MariaDB answers).
 */
export async function galeraSyncWait(pool: Pool, timeoutMs: number): Promise<number> {
  const sql = "SHOW VARIABLES WHERE Variable_name IN ('wsrep_on', 'wsrep_sync_wait', 'version')";
  const [rows] = await withTimeout('mysql', 'galera probe', timeoutMs + 250, pool.query({ sql, timeout: timeoutMs }));
  const vars = new Map((rows as Record<string, unknown>[]).map((r) => [String(r.Variable_name).toLowerCase(), String(r.Value)]));
  if (vars.get('wsrep_on')?.toUpperCase() !== 'ON' || !/mariadb/i.test(vars.get('version') ?? '')) return 0;
  const own = Number(vars.get('wsrep_sync_wait'));
  return (Number.isSafeInteger(own) && own > 0 ? own : 0) | SYNC_WAIT_BITS;
}
