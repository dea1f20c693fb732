// The public conformance suite, with its fault hooks, against a real standalone ZooKeeper 3.8
// (tick 200 ms, so sessions from 400 ms) on a free loopback port. Handles reach it through a
// TCP proxy, so the suite can cut their connections.
import { after } from 'node:test';
import { storeConformanceSuite } from '../../../src/testing/index.js';
import { PartitionProxy } from '../../../infra/proxy.js';
import { ZooKeeperStore } from '../../../src/stores/zookeeper/index.js';
import { ZooKeeperServer, freePort } from '../../../infra/servers/index.js';

const server = await new ZooKeeperServer().start();
const proxy = new PartitionProxy(server.port);
await proxy.listen();
after(async () => {
  await proxy.close();
  await server.stop();
});

const open = async () => ZooKeeperStore.fromUrl(`zk://127.0.0.1:${proxy.port}/conformance`);

await storeConformanceSuite({
  name: 'zookeeper',
  makeStore: open,
  faults: {
    kill: () => server.kill(),
    start: async () => void (await server.start()),
    freeze: async () => server.pause(),
    thaw: async () => server.resume(),
    cutConnections: async () => proxy.cutAll(),
    // An operator deletes the leader's latch node (`zkCli.sh delete /conformance/<lock>/_c_…`).
    deleteRecord: async (lock: string) => {
      const zk = (await import('node-zookeeper-client' as string)).default;
      const client = zk.createClient(server.connectString);
      client.connect();
      try {
        const dir = `/conformance/${lock.replace(/\//g, '%2F')}`;
        const children = await new Promise<string[]>((res, rej) => client.getChildren(dir, (e: unknown, ch: string[]) => (e ? rej(e) : res(ch))));
        const front = children.filter((n) => /latch-\d{10}$/.test(n)).sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)))[0];
        if (front) await new Promise<void>((res, rej) => client.remove(`${dir}/${front}`, -1, (e: unknown) => (e ? rej(e) : res())));
      } finally {
        client.close();
      }
    },
    makeUnreachableStore: async () => ZooKeeperStore.fromUrl(`zk://127.0.0.1:${await freePort()}/conformance?timeout=300ms`),
  },
});
