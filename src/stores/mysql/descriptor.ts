/** mysql://… and mariadb://… — a MySQL 8.0+ / MariaDB 10.5+ table; creates it if missing, or throws. */
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { parseMysqlUrl, type MysqlConfig } from './config.js';

/** mysqlStore is the descriptor of the MySQL/MariaDB store. */
export const mysqlStore: StoreDescriptor<MysqlConfig> = {
  name: 'mysql',
  schemes: ['mysql', 'mariadb'],
  crossProcess: true,
  parse: (text) => parseMysqlUrl(text),
  async open(config) {
    const { MysqlStore } = await import('./index.js');
    return MysqlStore.open({ url: config });
  },
};
