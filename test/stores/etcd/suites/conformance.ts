/**
 * etcdConformance runs the public conformance suite, with its fault hooks, on a real
 * single-member etcd of the given line on free loopback ports. etcd's smallest lease is 2 s with
 * its default timing (lease TTLs are whole seconds and at least 1.5 × the election timeout).
 * Store handles talk to etcd through a loopback TCP proxy so that `cutConnections` can drop them;
 * the watch stream shares the one gRPC connection, so there is no separate feed to cut.
 * `revocationGuard: 'on'` runs it with the guard a cluster turns on by itself (RevocationGuard).
 */
import { after } from 'node:test';
import { Etcd3 } from 'etcd3';
import { storeConformanceSuite } from '../../../../src/testing/index.js';
import { EtcdStore } from '../../../../src/stores/etcd/index.js';
import { EtcdServer, type EtcdLine } from '../../../../infra/servers/index.js';
import { PartitionProxy } from '../../../../infra/proxy.js';

export async function etcdConformance(line: EtcdLine, options: { revocationGuard?: 'on' } = {}): Promise<void> {
  const guarded = options.revocationGuard === 'on';
  const server = await new EtcdServer(undefined, { line }).start();
  const proxy = new PartitionProxy(server.port);
  await proxy.listen();
  after(async () => {
    await proxy.close();
    await server.stop();
  });

  await storeConformanceSuite({
    name: `etcd-${line}${guarded ? '-guarded' : ''}`,
    makeStore: async () => EtcdStore.fromUrl(`etcd://127.0.0.1:${proxy.port}${guarded ? '?revocationGuard=on' : ''}`),
    minLeaseMs: 2000,
    callTimeoutMs: 2_500,
    faults: {
      kill: () => server.kill(),
      start: async () => void (await server.start()),
      freeze: async () => server.pause(),
      thaw: async () => server.resume(),
      cutConnections: async () => proxy.cutAll(),
      // A lock's record is its candidate keys, `<lock>/<lease ID>`: an operator deletes them all.
      async deleteRecord(lock) {
        const client = new Etcd3({ hosts: server.endpoint });
        try {
          await client.delete().prefix(`${lock}/`);
        } finally {
          client.close();
        }
      },
      makeUnreachableStore: async () => EtcdStore.fromUrl('etcd://127.0.0.1:1?timeout=500ms'),
    },
  });
}
