// The conformance suite on a connection the application owns (NatsStore.open({ connection })):
// every handle shares it, and closing a handle leaves it open. Its own server, so no other
// file's restarts land in the middle of it.
import { after } from 'node:test';
import { connect } from 'nats';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { NatsStore } from '../../../src/stores/nats/index.js';
import { NatsServer } from '../../../infra/servers/index.js';

const server = await new NatsServer().start();
after(() => server.stop());

const shared = await connect({ servers: `127.0.0.1:${server.port}` });
after(() => shared.close());
await storeConformanceSuite({
  name: 'nats (application connection)',
  makeStore: () => NatsStore.open({ connection: shared, bucket: 'app' }),
});
