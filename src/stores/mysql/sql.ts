/**
 * The SQL of the MySQL/MariaDB store: one table of keyed rows, every operation one statement
 * (autocommit), plain text-protocol queries with `?` placeholders (the renewal-only batch is
 * written out as literals: see renewValues) — no session state, no
 * server-side prepared statements, no GET_LOCK — so it behaves the same through ProxySQL or
 * MaxScale and on Galera (where each statement also asks for a causality wait: galera.ts).
 * Meant for MySQL 8.0+ and MariaDB 10.5+ (InnoDB, DYNAMIC rows so a key of up to 2100 bytes can
 * be the primary key); tested on MariaDB 10.11, alone and as a three-node Galera cluster.
 *
 *   CREATE TABLE `<table>` (
 *     k       VARBINARY(2100) NOT NULL PRIMARY KEY,  -- lease/<lock> | term/<lock> | ledger/<key>
 *     v       MEDIUMBLOB NOT NULL,                   -- record JSON | term counter | ledger value (UTF-8)
 *     version VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
 *   ) ENGINE=InnoDB ROW_FORMAT=DYNAMIC
 */

/** q quotes a validated identifier (config.ts admits only [A-Za-z0-9_]). */
const q = (name: string) => `\`${name}\``;

/** MysqlStatements holds the statement texts for one table. */
export class MysqlStatements {
  readonly probe: string;
  readonly create: string;
  readonly get: string;
  readonly insert: string;
  readonly update: string;
  readonly list: string;
  readonly remove: string;
  readonly removeAt: string;

  /**
   * `syncWait`: a wsrep_sync_wait value every row statement carries (`SET STATEMENT … FOR`,
   * MariaDB Galera: galera.ts), or 0 for none.
   */
  constructor(readonly table: string, readonly syncWait = 0) {
    const t = q(table);
    this.probe = `SELECT 1 FROM ${t} LIMIT 0`;
    this.create = `CREATE TABLE IF NOT EXISTS ${t} (
      k VARBINARY(2100) NOT NULL PRIMARY KEY,
      v MEDIUMBLOB NOT NULL,
      version VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL
    ) ENGINE=InnoDB ROW_FORMAT=DYNAMIC`;
    this.get = this.wait(`SELECT v, version FROM ${t} WHERE k = ?`);
    // A plain INSERT: a duplicate key (ER_DUP_ENTRY) is the lost race. Not INSERT IGNORE, which
    // would also turn a truncated value into a warning.
    this.insert = this.wait(`INSERT INTO ${t} (k, v, version) VALUES (?, ?, ?)`);
    this.update = this.wait(`UPDATE ${t} SET v = ?, version = ? WHERE k = ? AND version = ?`);
    this.list = this.wait(`SELECT k, v, version FROM ${t} WHERE k LIKE ? ESCAPE '!' ORDER BY k LIMIT ?`);
    this.remove = this.wait(`DELETE FROM ${t} WHERE k = ?`);
    this.removeAt = this.wait(`DELETE FROM ${t} WHERE k = ? AND version = ?`);
  }

  /**
   * updateMany is one UPDATE for `n` compare-and-set replacements: each row matches only with
   * its expected version and takes its own value and new version. Parameters: n × (k, v),
   * n × (k, new version), n × (k, expected version).
   */
  updateMany(n: number): string {
    const whens = (what: string) => `CASE k ${Array.from({ length: n }, () => 'WHEN ? THEN ?').join(' ')} ELSE ${what} END`;
    const where = Array.from({ length: n }, () => '(k = ? AND version = ?)').join(' OR ');
    return this.wait(`UPDATE ${q(this.table)} SET v = ${whens('v')}, version = ${whens('version')} WHERE ${where}`);
  }

  /**
   * renewValues is one UPDATE for a renewal-only batch: each row still at its expected version
   * takes its new version and, inside its JSON text, the new renewedAt — nothing else of the
   * record is sent. `rows` is the batch as a derived table of literal rows (renewRow: `SELECT …
   * UNION ALL SELECT …`, as MySQL 8 and MariaDB spell a row constructor differently), read
   * first (STRAIGHT_JOIN), each row then found by primary key. The number after the text's
   * first `,"renewedAt":` is cut up to the next comma (record-codec.ts writes renewedAt before
   * the metadata, and no string of the record can hold `,"` unescaped); a text without one
   * keeps its value.
   */
  renewValues(rows: string): string {
    const at = `LOCATE(',"renewedAt":', l.v)`;
    const end = `LOCATE(',', l.v, ${at} + 13)`;
    const v = `IF(${at} = 0 OR ${end} = 0, l.v, INSERT(l.v, ${at} + 13, ${end} - ${at} - 13, b.r))`;
    return this.wait(`UPDATE (${rows}) AS b STRAIGHT_JOIN ${q(this.table)} AS l ON l.k = b.k AND l.version = b.e SET l.v = ${v}, l.version = b.n`);
  }

  /** versionsOf reads the versions of `n` keys (after a batch in which some did not match). */
  versionsOf(n: number): string {
    return this.wait(`SELECT k, version FROM ${q(this.table)} WHERE k IN (${Array.from({ length: n }, () => '?').join(', ')})`);
  }

  /** wait prefixes a statement with the causality wait, if there is one. */
  private wait(statement: string): string {
    return this.syncWait > 0 ? `SET STATEMENT wsrep_sync_wait=${this.syncWait} FOR ${statement}` : statement;
  }
}

/**
 * renewRow is row `i` of renewValues' derived table: key and expected version as SQL literals
 * (sqlLiteral), the new version (base64url) and renewedAt (digits) as they are. Row 0 names
 * the columns; the others follow with UNION ALL.
 */
export function renewRow(i: number, key: string, expected: string, next: string, renewedAt: string): string {
  return i === 0 ? `SELECT ${key} AS k, ${expected} AS e, '${next}' AS n, '${renewedAt}' AS r` : ` UNION ALL SELECT ${key}, ${expected}, '${next}', '${renewedAt}'`;
}

/**
 * sqlLiteral quotes `s` as an SQL string literal: as it is when it holds no quote, backslash
 * or control character (which reads the same with or without NO_BACKSLASH_ESCAPES), otherwise
 * with the driver's `escape`.
 */
export function sqlLiteral(s: string, escape: (s: string) => string): string {
  return /['\\\x00-\x1f]/.test(s) ? escape(s) : `'${s}'`;
}

/** likePrefix escapes a key prefix for `LIKE ? ESCAPE '!'`. */
export function likePrefix(prefix: string): string {
  return `${prefix.replace(/[!%_]/g, (c) => `!${c}`)}%`;
}
