/**
 * Batch renewal over TransactWriteItems on a real moto server, through a small proxy that counts
 * the DynamoDB operations it forwards (by X-Amz-Target) and can answer some TransactWriteItems
 * itself with DynamoDB's throttling errors, as a table at its limit does — a fault from outside,
 * as the other stores' fault tests inject theirs. moto itself never throttles.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openDynamoStore, type DynamoStore } from '../../../src/stores/dynamodb/index.js';
import { acquireWrite, keepWrite } from '../../../src/testing/conformance/context.js';
import type { LeaseRecord } from '../../../src/core/store.js';
import { StoreUnavailableError } from '../../../src/core/errors.js';
import { THROTTLE_RETRIES } from '../../../src/stores/dynamodb/transact.js';
import { startDynamoServer } from './servers.js';

const server = await startDynamoServer('moto');

/** A throttled answer the proxy gives instead of forwarding: DynamoDB's JSON error body. */
type Throttle = 'call' | 'item';

/** OperationProxy forwards to moto, counts operations, and throttles the TransactWriteItems it is told to. */
class OperationProxy {
  readonly counts = new Map<string, number>();
  /** The next TransactWriteItems requests are answered with these, in order, instead of forwarded. */
  readonly throttles: Throttle[] = [];
  /** How many of the next PutItem requests reach moto but have their answer dropped (the connection reset). */
  dropPutAnswers = 0;
  private readonly http = createServer((req, res) => void this.handle(req, res));

  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.http.listen(0, '127.0.0.1', resolve));
    return (this.http.address() as AddressInfo).port;
  }

  close(): Promise<void> {
    this.http.closeAllConnections();
    return new Promise((resolve) => this.http.close(() => resolve()));
  }

  count(operation: string): number {
    return this.counts.get(operation) ?? 0;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const operation = String(req.headers['x-amz-target'] ?? '').split('.').pop() ?? '';
    this.counts.set(operation, this.count(operation) + 1);
    const throttle = operation === 'TransactWriteItems' ? this.throttles.shift() : undefined;
    if (throttle) return throttled(res, throttle, (JSON.parse(body.toString()) as { TransactItems: unknown[] }).TransactItems.length);
    const drop = operation === 'PutItem' && this.dropPutAnswers > 0 && this.dropPutAnswers-- > 0;
    const upstream = request({ host: '127.0.0.1', port: server.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      if (drop) return up.resume().on('end', () => res.socket?.resetAndDestroy());
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    upstream.end(body);
  }
}

/**
 * throttled answers as DynamoDB does: the whole call refused (ThrottlingException), or the
 * transaction cancelled with the first item throttled and the others cancelled with it.
 */
function throttled(res: ServerResponse, kind: Throttle, items: number): void {
  const prefix = 'com.amazonaws.dynamodb.v20120810#';
  const body =
    kind === 'call'
      ? { __type: `${prefix}ThrottlingException`, message: 'Rate of requests exceeds the allowed throughput.' }
      : {
          __type: `${prefix}TransactionCanceledException`,
          Message: `Transaction cancelled, please refer cancellation reasons for specific reasons [ThrottlingError${', None'.repeat(items - 1)}]`,
          CancellationReasons: Array.from({ length: items }, (_, i) => (i === 0 ? { Code: 'ThrottlingError', Message: 'Throughput exceeds the current capacity of your table or index.' } : { Code: 'None' })),
        };
  res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-requestid': 'baton-test' });
  res.end(JSON.stringify(body));
}

const proxy = new OperationProxy();
const proxyPort = await proxy.listen();
after(() => proxy.close());

const viaProxy = (table: string) => openDynamoStore({ table, endpoint: `http://127.0.0.1:${proxyPort}`, region: 'us-east-1', timeoutMs: 20_000 });

/** holdLeases acquires `n` leases on `store` as holder "a", ten at a time (moto is one Python process). */
async function holdLeases(store: DynamoStore, prefix: string, n: number): Promise<LeaseRecord[]> {
  const held: LeaseRecord[] = [];
  for (let i = 0; i < n; i += 10) {
    const results = await Promise.all(Array.from({ length: Math.min(10, n - i) }, (_, j) => store.write(`${prefix}-${i + j}`, null, acquireWrite('a'))));
    for (const r of results) {
      assert.ok(r.ok, 'acquired');
      held.push(r.record);
    }
  }
  return held;
}

describe('dynamodb (moto): batch renewal over TransactWriteItems', () => {
  it('a lease taken by another handle meanwhile fails alone; the others renew in transactions, no PutItem', async () => {
    const a = await viaProxy('batch');
    const b = await viaProxy('batch');
    try {
      // 150 leases: two transactions (100 + 50), the taken lease in the first.
      const held = await holdLeases(a, 'taken', 150);
      const taken = held[37]!;
      const stolen = await b.write(taken.lock, taken.revision, acquireWrite('b'));
      assert.ok(stolen.ok, 'b took lease 37 at the revision a holds');
      const before = { transact: proxy.count('TransactWriteItems'), put: proxy.count('PutItem') };
      const results = await a.renewMany!(held.map((r) => ({ lock: r.lock, expected: r.revision, next: keepWrite('a') })));
      results.forEach((r, i) => assert.equal(r.ok, i !== 37, `lease ${i}`));
      assert.equal(a.backend.batchCall, 'TransactWriteItems');
      // One transaction each, plus the first one again without lease 37.
      assert.equal(proxy.count('TransactWriteItems') - before.transact, 3, 'TransactWriteItems calls');
      assert.equal(proxy.count('PutItem') - before.put, 0, 'no PutItem per lease');
      for (const i of [0, 36, 38, 99, 100, 149]) {
        const renewed = results[i]!;
        assert.ok(renewed.ok);
        const stored = await b.read(held[i]!.lock);
        assert.equal(stored?.revision, renewed.record.revision, `lease ${i} is stored at the revision renewMany answered`);
        assert.equal(stored?.holder, 'a');
        assert.equal(stored?.term, held[i]!.term, 'a renewal keeps the term');
      }
      const lost = await a.read(taken.lock);
      assert.equal(lost?.holder, 'b', "b's acquisition was not overwritten");
      assert.ok(lost && lost.term > taken.term);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('throttled answers (the whole call, one item of a transaction) are retried with backoff, never a lost race', async () => {
    const a = await viaProxy('throttled');
    try {
      const held = await holdLeases(a, 'throttled', 40);
      // Four whole-call refusals: the SDK's own three attempts, then one backoff of the store;
      // then two cancellations with a throttled item, then moto answers.
      proxy.throttles.push('call', 'call', 'call', 'call', 'item', 'item');
      const before = proxy.count('TransactWriteItems');
      const results = await a.renewMany!(held.map((r) => ({ lock: r.lock, expected: r.revision, next: keepWrite('a') })));
      assert.equal(proxy.throttles.length, 0, 'every throttled answer was given');
      assert.equal(proxy.count('TransactWriteItems') - before, 7, 'six throttled answers, then the transaction that went through');
      results.forEach((r, i) => assert.ok(r.ok, `lease ${i} renewed, not lost`));
      const stored = await a.read(held[0]!.lock);
      assert.equal(stored?.revision, results[0]!.ok ? results[0]!.record.revision : undefined);
    } finally {
      await a.close();
    }
  });

  it('a group throttled past every retry fails the call as a store error, never as lost leases', async () => {
    const a = await viaProxy('throttled-out');
    try {
      const held = await holdLeases(a, 'throttled-out', 150);
      // The first group of 100 goes alone: 3 SDK attempts × (1 + THROTTLE_RETRIES) sends, all refused.
      proxy.throttles.push(...Array.from({ length: 3 * (1 + THROTTLE_RETRIES) }, () => 'call' as const));
      await assert.rejects(
        a.renewMany!(held.map((r) => ({ lock: r.lock, expected: r.revision, next: keepWrite('a') }))),
        (err: Error) => err instanceof StoreUnavailableError && /TransactWriteItems/.test(err.message),
      );
      assert.equal(proxy.throttles.length, 0, 'every throttled answer was given');
      // The other group was renewed meanwhile: its leases are still a's, at a newer revision.
      const last = await a.read(held[149]!.lock);
      assert.equal(last?.holder, 'a');
      assert.notEqual(last?.revision, held[149]!.revision);
    } finally {
      await a.close();
    }
  });

  it('a write applied but unanswered, then refused on the SDK retry, is read back as applied, not lost', async () => {
    const a = await viaProxy('unanswered');
    try {
      const [held] = await holdLeases(a, 'unanswered', 1);
      const before = proxy.count('PutItem');
      proxy.dropPutAnswers = 1;
      const renewed = await a.write(held!.lock, held!.revision, keepWrite('a'));
      assert.equal(proxy.dropPutAnswers, 0, 'the first answer was dropped');
      assert.equal(proxy.count('PutItem') - before, 2, 'the SDK sent the write again');
      assert.ok(renewed.ok, 'the renewal that was applied is answered as applied');
      assert.equal((await a.read(held!.lock))?.revision, renewed.record.revision);
    } finally {
      await a.close();
    }
  });

  it('batch=off renews one PutItem per lease', async () => {
    const a = await openDynamoStore({ table: 'batch-off', endpoint: `http://127.0.0.1:${proxyPort}`, region: 'us-east-1', timeoutMs: 20_000, batch: 'off' });
    const b = await viaProxy('batch-off');
    try {
      const held = await holdLeases(a, 'off', 10);
      assert.ok((await b.write(held[3]!.lock, held[3]!.revision, acquireWrite('b'))).ok, 'b took lease 3');
      const before = { transact: proxy.count('TransactWriteItems'), put: proxy.count('PutItem') };
      const results = await a.renewMany!(held.map((r) => ({ lock: r.lock, expected: r.revision, next: keepWrite('a') })));
      results.forEach((r, i) => assert.equal(r.ok, i !== 3, `lease ${i}`));
      assert.equal(a.backend.batchCall, 'PutItem');
      assert.equal(proxy.count('TransactWriteItems') - before.transact, 0);
      assert.equal(proxy.count('PutItem') - before.put, 10);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
