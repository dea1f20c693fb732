/**
 * postgres://… and postgresql://… — the connection's own settings come from the URL and the
 * usual PG* environment variables (read by node-postgres); baton's options are listed in
 * docs/stores/postgres.md.
 */
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { parsePostgresUrl } from './config.js';

/** postgresStore is the descriptor of the PostgreSQL store. */
export const postgresStore: StoreDescriptor<string> = {
  name: 'postgres',
  schemes: ['postgres', 'postgresql'],
  crossProcess: true,
  parse(text, options) {
    parsePostgresUrl(text.trim(), {}, options.env);
    return text.trim();
  },
  async open(connectionString) {
    const { PostgresStore } = await import('./index.js');
    return new PostgresStore({ connectionString });
  },
};
