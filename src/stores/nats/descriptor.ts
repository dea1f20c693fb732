/** nats://… — a NATS JetStream KV bucket; connects, binds (or creates) the bucket, or throws. */
import type { StoreDescriptor } from '../../core/store-descriptor.js';
import { parseNatsUrl, type NatsConfig } from './config.js';

/** natsStore is the descriptor of the NATS KV store. */
export const natsStore: StoreDescriptor<NatsConfig> = {
  name: 'nats',
  schemes: ['nats'],
  crossProcess: true,
  parse: (text) => parseNatsUrl(text),
  async open(config) {
    const { NatsStore } = await import('./index.js');
    return NatsStore.open({ url: config });
  },
};
