import { NatsServer } from './infra/servers/index.js';
import { connect, StorageType } from 'nats';
const s = await new NatsServer().start();
const nc = await connect({ servers: `127.0.0.1:${s.port}` });
const kv = await nc.jetstream({ timeout: 5000 }).views.kv('b', { history: 1, storage: StorageType.File });
const N = 10000;
const revs: number[] = [];
let t = performance.now();
for (let i = 0; i < N; i += 500) {
  const r = await Promise.all(Array.from({ length: Math.min(500, N - i) }, (_, j) => kv.create(`lease.k${i + j}`, new TextEncoder().encode('x'.repeat(300)))));
  revs.push(...r);
}
console.log('create', (performance.now() - t).toFixed(0), 'ms');
t = performance.now();
for (let i = 0; i < N; i += 500) {
  const r = await Promise.all(Array.from({ length: Math.min(500, N - i) }, (_, j) => kv.update(`lease.k${i + j}`, new TextEncoder().encode('y'.repeat(300)), revs[i + j]!)));
  r.forEach((v, j) => (revs[i + j] = v));
}
console.log('update', (performance.now() - t).toFixed(0), 'ms');
t = performance.now();
for (let i = 0; i < N; i += 500) await Promise.all(Array.from({ length: Math.min(500, N - i) }, (_, j) => kv.get(`lease.k${i + j}`)));
console.log('get', (performance.now() - t).toFixed(0), 'ms');
t = performance.now();
for (let i = 0; i < N; i += 500) await Promise.all(Array.from({ length: Math.min(500, N - i) }, (_, j) => kv.put(`term.k${i + j}`, new TextEncoder().encode('1'))));
console.log('put', (performance.now() - t).toFixed(0), 'ms');
await nc.close(); await s.stop();
