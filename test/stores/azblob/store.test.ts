/**
 * What the conformance suite cannot see about the Azure Blob store, against a real azurite:
 * the blob layout and lease state, the server's own exclusion (an ETag match is not enough while
 * another blob lease is live), a broken lease seen by the leader, leases past 60 s (infinite,
 * broken only at a stale ETag), the term surviving the record's deletion, the proposed lease ID
 * making a retried acquisition safe, an application's own ContainerClient, timeouts on a frozen
 * or absent server, and the URL rules.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { LeaderElector } from '../../../src/core/elector.js';
import { InvalidConfigError, StoreUnavailableError } from '../../../src/core/errors.js';
import type { LeaseRecord, LeaseStore, LeaseWrite } from '../../../src/core/store.js';
import { AzblobStore, blobLeaseSeconds, parseAzblobUrl } from '../../../src/stores/azblob/index.js';
import { proposedLeaseId } from '../../../src/stores/azblob/lease.js';
import { blobName, keyOf, namePrefix } from '../../../src/stores/azblob/names.js';
import { openStore, parseStoreUrl } from '../../../src/stores/registry.js';
import { AzuriteServer, freePort } from '../../../infra/servers/index.js';

const server = await new AzuriteServer().start();
const service = BlobServiceClient.fromConnectionString(server.connectionString, { retryOptions: { maxTries: 1 } });
const container = service.getContainerClient('units');
const opened: LeaseStore[] = [];
after(async () => {
  await Promise.all(opened.map((s) => s.close()));
  await server.stop();
});

async function store(options: { prefix?: string; timeoutMs?: number } = {}, on: ContainerClient = container): Promise<AzblobStore> {
  const s = await AzblobStore.fromContainer(on, { timeoutMs: 3000, ...options });
  opened.push(s);
  return s;
}

let n = 0;
const lockName = (what: string) => `az-${what}-${process.pid}-${n++}`;
function acquire(holder: string, leaseDurationMs = 5_000, instance = 'i1'): LeaseWrite {
  const now = Date.now();
  return { holder, newTerm: true, leaseDurationMs, acquiredAt: now, renewedAt: now, transitions: 1, stepDownRequested: false, metadata: { instance } };
}
const keep = (r: LeaseRecord, extra: Partial<LeaseWrite> = {}): LeaseWrite => ({ ...acquire(r.holder ?? 'x', r.leaseDurationMs), newTerm: false, ...extra });
/** until polls `check` every 20 ms until it holds, failing after `ms`. */
async function until(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  for (const end = Date.now() + ms; !check(); await new Promise((r) => setTimeout(r, 20))) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
  }
}
const leaseBlob = (lock: string, prefix = 'baton/') => container.getBlockBlobClient(blobName(prefix, `lease/${lock}`));

describe('azblob: layout', () => {
  it('an acquisition is a leased blob holding the record, with its lease ID in metadata and the term in a counter blob', async () => {
    const s = await store();
    const lock = lockName('layout');
    const r = await s.write(lock, null, acquire('alice'));
    assert.ok(r.ok);
    const props = await leaseBlob(lock).getProperties();
    assert.equal(props.leaseState, 'leased');
    assert.equal(props.leaseDuration, 'fixed');
    assert.equal(props.etag, r.record.revision, 'the revision is the ETag');
    assert.match(props.metadata?.batonlease ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const body = JSON.parse((await leaseBlob(lock).downloadToBuffer()).toString()) as { holder: string; term: number };
    assert.deepEqual([body.holder, body.term], ['alice', r.record.term]);
    const counter = await container.getBlockBlobClient(blobName('baton/', `term/${lock}`)).downloadToBuffer();
    assert.equal(counter.toString(), String(r.record.term));
    // A write without the lease ID is refused by the server itself.
    await assert.rejects(leaseBlob(lock).upload('x', 1), (e: { statusCode?: number }) => e.statusCode === 412);
    const renewed = await s.write(lock, r.record.revision, keep(r.record));
    assert.ok(renewed.ok);
    assert.notEqual(renewed.record.revision, r.record.revision, 'every renewal rewrites the blob');
    const released = await s.write(lock, renewed.record.revision, keep(renewed.record, { holder: null }));
    assert.ok(released.ok);
    assert.equal((await leaseBlob(lock).getProperties()).leaseState, 'available', 'release frees the blob lease');
    assert.equal((await s.read(lock))?.holder, null);
  });

  it('?prefix= keeps every blob under another folder; list sees only its own', async () => {
    const [a, b] = [await store({ prefix: 'app1/' }), await store()];
    const lock = lockName('prefix');
    assert.ok((await a.write(lock, null, acquire('alice'))).ok);
    assert.equal(await leaseBlob(lock, 'app1/').exists(), true);
    assert.equal(await leaseBlob(lock).exists(), false);
    assert.ok((await a.list()).some((r) => r.lock === lock));
    assert.ok(!(await b.list()).some((r) => r.lock === lock));
  });

  it('blob names escape what Azure treats specially and map back one-to-one', () => {
    for (const key of ['lease/a.b:c-d_e', 'lease/a/b/', 'ledger/x.', 'ledger/ünï cødé/✓', 'term/~tilde']) {
      const name = blobName('p/', key);
      assert.equal(keyOf('p/', name), key);
      assert.ok(!name.slice(2).replace(/^[a-z]+\//, '').includes('/'), `${name} has no inner folder`);
      assert.ok(!name.endsWith('.'), `${name} does not end with a dot`);
    }
    assert.equal(blobName('baton/', 'lease/orders.v1:eu-west'), 'baton/lease/orders.v1:eu-west');
    assert.ok(blobName('b/', 'ledger/a.b').startsWith(namePrefix('b/', 'ledger/a.')));
  });
});

describe('azblob: the blob lease', () => {
  it('maps baton lease durations onto 15–60 s blob leases, infinite past 60 s', () => {
    assert.deepEqual([600, 14_999, 15_000, 15_001, 59_500, 60_000, 60_001, 3_600_000].map(blobLeaseSeconds), [15, 15, 15, 16, 60, 60, -1, -1]);
  });

  it('a matching ETag is not enough while another blob lease is live: the server refuses the takeover', async () => {
    const [a, b] = [await store(), await store()];
    const lock = lockName('exclusion');
    const r = await a.write(lock, null, acquire('alice', 1_000));
    assert.ok(r.ok);
    // bob acts as if he had watched alice's record stay unchanged for her whole (1 s) lease.
    const taken = await b.write(lock, r.record.revision, acquire('bob', 1_000, 'i2'));
    assert.equal(taken.ok, false);
    assert.equal((await b.read(lock))?.holder, 'alice');
    assert.equal((await leaseBlob(lock).getProperties()).leaseState, 'leased');
  });

  it('a broken blob lease: the leader\'s next renewal is a lost race with the record as it stands, and it may still free its record', async () => {
    const s = await store();
    const lock = lockName('broken');
    const r = await s.write(lock, null, acquire('alice'));
    assert.ok(r.ok);
    await leaseBlob(lock).getBlobLeaseClient().breakLease(0);
    const refused = await s.write(lock, r.record.revision, keep(r.record));
    assert.equal(refused.ok, false, 'a lost race, not an error');
    assert.ok(!refused.ok && refused.current, 'with the current record');
    assert.deepEqual([refused.current.holder, refused.current.revision], ['alice', r.record.revision], 'the break left the blob as it was');
    assert.equal((await s.read(lock))?.revision, r.record.revision, 'nothing was written');
    // Another lease ID holding the blob (a tool other than baton) is the same lost race.
    const stranger = leaseBlob(lock).getBlobLeaseClient('00000000-0000-4000-8000-000000000001');
    await stranger.acquireLease(15);
    const taken = await s.write(lock, r.record.revision, keep(r.record));
    assert.ok(!taken.ok && taken.current?.revision === r.record.revision);
    await stranger.releaseLease();
    const released = await s.write(lock, r.record.revision, keep(r.record, { holder: null }));
    assert.ok(released.ok, 'a release needs only the ETag once the lease is gone');
  });

  it('a leader whose blob lease is broken steps down at its next renewal, not at its deadline, and before any other candidate leads', async () => {
    // Renew deadline 10 s, retry 500 ms: a step-down at the deadline would take seconds; the lost
    // race ends the leadership at the next renewal (≤ one retry period plus a round trip).
    const timing = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 500 };
    const lock = lockName('break-elector');
    const a = new LeaderElector({ store: await store(), lock, identity: 'alice', ...timing });
    const b = new LeaderElector({ store: await store(), lock, identity: 'bob', ...timing });
    const events: string[] = [];
    for (const e of [a, b]) {
      e.on('elected', ({ term }) => events.push(`${e.identity} elected ${term}`));
      e.on('stopped', ({ term, reason }) => events.push(`${e.identity} stopped ${term} ${reason}`));
    }
    const storeErrors: unknown[] = [];
    a.on('storeError', (err) => storeErrors.push(err));
    try {
      a.start();
      const won = await a.elected();
      b.start();
      await until('bob to see alice lead', () => b.leader()?.holder === 'alice');
      const stopped = new Promise<number>((resolve) => a.once('stopped', () => resolve(Date.now())));
      const brokeAt = Date.now();
      await leaseBlob(lock).getBlobLeaseClient().breakLease(0);
      const took = (await stopped) - brokeAt;
      // Liveness bound with slack for a loaded 2-core machine; the deadline would be ~10 s.
      assert.ok(took < 3_000, `alice stopped ${took} ms after the break (her renew deadline is 10 s)`);
      assert.equal(events.indexOf(`alice stopped ${won.term} lost`) >= 0, true, events.join('; '));
      assert.ok(!events.some((x) => x.startsWith('bob elected')), `nobody else led before alice stopped: ${events.join('; ')}`);
      assert.equal(storeErrors.length, 0, 'a broken lease is a lost race, not a store error');
      // Whoever leads next does so under a higher term (alice may take her orphaned record back at once).
      const next = await Promise.race([a.elected(), b.elected()]);
      assert.ok(next.term > won.term, `term ${next.term} after ${won.term}`);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('a lease past 60 s is an infinite blob lease, broken only at the ETag the candidate watched', async () => {
    const [a, b] = [await store(), await store()];
    const lock = lockName('infinite');
    const r = await a.write(lock, null, acquire('alice', 90_000));
    assert.ok(r.ok);
    assert.equal((await leaseBlob(lock).getProperties()).leaseDuration, 'infinite');
    const renewed = await a.write(lock, r.record.revision, keep(r.record));
    assert.ok(renewed.ok);
    // A candidate still holding the older ETag (it missed the renewal) neither breaks nor takes.
    assert.equal((await b.write(lock, r.record.revision, acquire('bob', 90_000, 'i2'))).ok, false);
    assert.equal((await leaseBlob(lock).getProperties()).leaseState, 'leased');
    // One that watched the current ETag for a whole lease breaks the lease and takes over.
    const taken = await b.write(lock, renewed.record.revision, acquire('bob', 90_000, 'i2'));
    assert.ok(taken.ok);
    assert.ok(taken.record.term > r.record.term);
    // alice's next renewal fails: a lost race (the ETag moved), or the lease named as not hers.
    const late = await a.write(lock, renewed.record.revision, keep(renewed.record)).catch((e: Error) => e);
    assert.ok(late instanceof StoreUnavailableError || (!(late instanceof Error) && late.ok === false), String(late));
    assert.equal((await a.read(lock))?.holder, 'bob');
  });

  it('the term survives the record blob being deleted', async () => {
    const s = await store();
    const lock = lockName('deleted');
    const r = await s.write(lock, null, acquire('alice'));
    assert.ok(r.ok);
    await s.deleteRecord(lock);
    assert.equal(await s.read(lock), null);
    const again = await s.write(lock, null, acquire('bob', 5_000, 'i2'));
    assert.ok(again.ok);
    assert.ok(again.record.term > r.record.term, `term ${again.record.term} after ${r.record.term}`);
  });

  it('the proposed lease ID makes a retried acquisition safe: the same candidate from the same ETag gets in, another does not', async () => {
    const s = await store();
    const lock = lockName('retry');
    const first = await s.write(lock, null, acquire('alice'));
    assert.ok(first.ok);
    const free = await s.write(lock, first.record.revision, keep(first.record, { holder: null }));
    assert.ok(free.ok);
    // bob's Acquire Lease reached the server, but its answer was lost.
    const id = proposedLeaseId(lock, 'bob', 'i2', free.record.revision);
    await leaseBlob(lock).getBlobLeaseClient(id).acquireLease(15, { conditions: { ifMatch: free.record.revision } });
    assert.equal((await s.write(lock, free.record.revision, acquire('carol', 5_000, 'i3'))).ok, false, 'carol is refused: the lease is bob\'s');
    const retried = await s.write(lock, free.record.revision, acquire('bob', 5_000, 'i2'));
    assert.ok(retried.ok, 'bob\'s retry proposes the same ID and is granted');
    assert.equal((await leaseBlob(lock).getProperties()).metadata?.batonlease, id);
  });
});

describe('azblob: connections', () => {
  it('works on an application-owned ContainerClient and creates a missing container', async () => {
    const fresh = service.getContainerClient(`owned-${process.pid}`);
    assert.equal(await fresh.exists(), false);
    const s = await store({}, fresh);
    assert.equal(await fresh.exists(), true);
    assert.ok((await s.write(lockName('owned'), null, acquire('alice'))).ok);
  });

  it('openStore with ?endpoint= reaches the service the endpoint names, not the connection string\'s', async () => {
    const dead = server.connectionString.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${await freePort()}`);
    const s = await openStore(`azblob://units?endpoint=${encodeURIComponent(server.endpoint)}`, { env: { AZURE_STORAGE_CONNECTION_STRING: dead } });
    opened.push(s);
    assert.equal(s.kind, 'azblob');
    assert.ok((await s.write(lockName('endpoint'), null, acquire('alice'))).ok);
  });

  it('refuses a missing container it may not create, in one line', async () => {
    const missing = service.getContainerClient(`missing-${process.pid}`);
    await assert.rejects(AzblobStore.fromContainer(missing, { createContainer: false }), (e: Error) => e instanceof InvalidConfigError && /does not exist/.test(e.message) && !e.message.includes('\n'));
  });

  it('refused credentials are a configuration error at open', async () => {
    const wrong = server.connectionString.replace(/AccountKey=[^;]+/, `AccountKey=${Buffer.from('not the key').toString('base64')}`);
    const c = BlobServiceClient.fromConnectionString(wrong, { retryOptions: { maxTries: 1 } }).getContainerClient('units');
    await assert.rejects(AzblobStore.fromContainer(c), (e: Error) => e instanceof InvalidConfigError && /credentials refused/.test(e.message));
  });

  it('an absent server fails open and every call with StoreUnavailableError, promptly', async () => {
    const port = await freePort();
    const cs = server.connectionString.replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${port}`);
    const c = BlobServiceClient.fromConnectionString(cs, { retryOptions: { maxTries: 1 } }).getContainerClient('units');
    await assert.rejects(AzblobStore.fromContainer(c, { timeoutMs: 1000 }), StoreUnavailableError);
    const s = await AzblobStore.fromContainer(c, { timeoutMs: 1000, checkContainer: false });
    opened.push(s);
    for (const call of [() => s.read('x'), () => s.write('x', null, acquire('a')), () => s.list(), () => s.ledger.get('k')]) {
      const t0 = Date.now();
      await assert.rejects(call(), (e: Error) => e instanceof StoreUnavailableError && !e.message.includes('\n'));
      assert.ok(Date.now() - t0 < 3_000, 'no hang');
    }
  });

  it('a frozen server fails a call at the timeout instead of hanging', async () => {
    const s = await store({ timeoutMs: 500 });
    server.pause();
    try {
      const t0 = Date.now();
      await assert.rejects(s.read(lockName('frozen')), (e: Error) => e instanceof StoreUnavailableError && /no answer within 500 ms/.test(e.message));
      assert.ok(Date.now() - t0 < 3_000);
    } finally {
      server.resume();
    }
  });
});

describe('azblob: URL', () => {
  const env = { AZURE_STORAGE_CONNECTION_STRING: 'DefaultEndpointsProtocol=http;AccountName=a;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/a;' };
  it('reads both URL forms and their options', () => {
    assert.deepEqual(parseAzblobUrl('azblob://leases', env), { container: 'leases', auth: { connectionString: env.AZURE_STORAGE_CONNECTION_STRING }, prefix: 'baton/', timeoutMs: 5000 });
    assert.deepEqual(parseAzblobUrl('azblob://myaccount/leases?prefix=app/&timeout=2s', {}), { container: 'leases', auth: { account: 'myaccount' }, prefix: 'app/', timeoutMs: 2000 });
    assert.equal(parseStoreUrl('azblob://leases', { env }).descriptor.name, 'azblob');
    assert.equal(parseAzblobUrl('azblob://leases?endpoint=http://127.0.0.1:9/devstoreaccount1/', env).endpoint, 'http://127.0.0.1:9/devstoreaccount1');
  });

  it('rejects bad URLs with one line naming the problem, before any I/O', () => {
    for (const [url, e, pattern] of [
      ['azblob://leases', {}, /needs AZURE_STORAGE_CONNECTION_STRING/],
      ['azblob://leases', { AZURE_STORAGE_CONNECTION_STRING: 'hello' }, /not a storage connection string/],
      ['azblob://Leases', env, /container "Leases"/],
      ['azblob://a--b', env, /container "a--b"/],
      ['azblob://My_Account/leases', env, /account "My_Account"/],
      ['azblob://leases?colour=red', env, /unknown URL option "colour"/],
      ['azblob://leases?timeout=0ms', env, /timeout "0ms"/],
      ['azblob://a/b/c', env, /is not azblob:\/\/CONTAINER/],
      ['azblob://leases?endpoint=ftp://x', env, /endpoint "ftp:\/\/x" is not an http\(s\) URL/],
    ] as const) {
      assert.throws(() => parseAzblobUrl(url, e), (err: Error) => err instanceof InvalidConfigError && pattern.test(err.message) && !err.message.includes('\n'), url);
    }
  });
});
