import { sqlitePathOf, type StoreOpenOptions } from '../../core/store-url.js';
import { SqliteStore } from './index.js';

/** open handles `sqlite:PATH`. */
export async function open(url: URL, _options: StoreOpenOptions): Promise<SqliteStore> {
  return new SqliteStore(sqlitePathOf(url));
}
