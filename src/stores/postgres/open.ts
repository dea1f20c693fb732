import type { StoreOpenOptions } from '../../core/store-url.js';
import { PostgresStore } from './index.js';

/**
 * open handles `postgres://` and `postgresql://` URLs. The connection's own settings come from
 * the URL and the usual PG* environment variables (read by node-postgres); baton's options are
 * listed in docs/stores/postgres.md.
 */
export async function open(url: URL, _options: StoreOpenOptions): Promise<PostgresStore> {
  return new PostgresStore({ connectionString: url.href });
}
