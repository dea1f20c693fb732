/** dynamodb://TABLE — an Amazon DynamoDB table (created on first use when the credentials allow). */
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { parseDynamoUrl, type DynamoConfig } from './config.js';

/** dynamodbStore is the descriptor of the DynamoDB store; the SDK loads only in `open`. */
export const dynamodbStore: StoreDescriptor<DynamoConfig> = {
  name: 'dynamodb',
  schemes: ['dynamodb'],
  crossProcess: true,
  parse(text) {
    return parseDynamoUrl(text);
  },
  async open(config) {
    const { openDynamoStore } = await import('./index.js');
    return openDynamoStore(config);
  },
};
