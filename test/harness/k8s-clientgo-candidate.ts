/**
 * A leader-election candidate that follows client-go's algorithm step by step
 * (kubernetes/client-go tools/leaderelection/leaderelection.go with resourcelock/leaselock.go,
 * as of the 0.29+ releases: the leader's optimistic fast path, release with leaseDurationSeconds 1),
 * re-implemented for the interop test because no Go toolchain is available here. It contends for
 * one Lease next to baton candidates and logs `start`/`stop` lines in the format of the process
 * tests' child log (test/harness/cli.ts), with term 0 (client-go has no fencing token).
 *
 * The protected work "stops" (the stop line) when leadership is lost or SIGTERM arrives, before
 * the release, as client-go's ReleaseOnCancel documentation requires of its users.
 *
 * Environment: K8S_SERVER, K8S_CA (PEM file), K8S_TOKEN, K8S_NAMESPACE, LEASE, IDENTITY,
 * LEASE_MS, RENEW_DEADLINE_MS, RETRY_MS, CHILD_LOG.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import https from 'node:https';

const env = process.env;
const server = new URL(env.K8S_SERVER!);
const agent = new https.Agent({ keepAlive: true, ca: readFileSync(env.K8S_CA!) });
const base = `/apis/coordination.k8s.io/v1/namespaces/${env.K8S_NAMESPACE}/leases`;
const identity = env.IDENTITY!;
const leaseDurationMs = Number(env.LEASE_MS);
const renewDeadlineMs = Number(env.RENEW_DEADLINE_MS);
const retryPeriodMs = Number(env.RETRY_MS);
const JITTER_FACTOR = 1.2; // leaderelection.JitterFactor

/** LeaderElectionRecord as in resourcelock/interface.go. */
interface Record_ { holderIdentity: string; leaseDurationSeconds: number; acquireTime: string | null; renewTime: string | null; leaderTransitions: number }

const log = (kind: 'start' | 'stop') => appendFileSync(env.CHILD_LOG!, [kind, 0, process.pid, process.hrtime.bigint(), Date.now(), identity].join(' ') + '\n');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** metav1.MicroTime's JSON: RFC3339 with six fractional digits, UTC. */
const microNow = () => new Date().toISOString().replace(/Z$/, '000Z');

class NotFound extends Error {}

function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(new URL(path, server), {
      method, agent, timeout: 5000,
      headers: { authorization: `Bearer ${env.K8S_TOKEN}`, accept: 'application/json', ...(data ? { 'content-type': 'application/json' } : {}) },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(data);
  });
}

/** LeaseLock: Get / Create / Update on the last object read, as resourcelock/leaselock.go. */
const lock = {
  lease: undefined as any,
  spec(r: Record_) {
    return { holderIdentity: r.holderIdentity, leaseDurationSeconds: r.leaseDurationSeconds, acquireTime: r.acquireTime, renewTime: r.renewTime, leaseTransitions: r.leaderTransitions };
  },
  record(lease: any): Record_ {
    const s = lease.spec ?? {};
    return { holderIdentity: s.holderIdentity ?? '', leaseDurationSeconds: s.leaseDurationSeconds ?? 0, acquireTime: s.acquireTime ?? null, renewTime: s.renewTime ?? null, leaderTransitions: s.leaseTransitions ?? 0 };
  },
  async get(): Promise<Record_> {
    const res = await call('GET', `${base}/${env.LEASE}`);
    if (res.status === 404) throw new NotFound();
    if (res.status !== 200) throw new Error(`get: ${res.status}`);
    this.lease = res.body;
    return this.record(res.body);
  },
  async create(r: Record_): Promise<void> {
    const res = await call('POST', base, { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: env.LEASE, namespace: env.K8S_NAMESPACE }, spec: this.spec(r) });
    if (res.status !== 201) throw new Error(`create: ${res.status}`);
    this.lease = res.body;
  },
  async update(r: Record_): Promise<void> {
    if (!this.lease) throw new Error('lease not initialized, call get or create first');
    const res = await call('PUT', `${base}/${env.LEASE}`, { ...this.lease, spec: { ...this.lease.spec, ...this.spec(r) } });
    if (res.status !== 200) throw new Error(`update: ${res.status}`);
    this.lease = res.body;
  },
};

let observedRecord: Record_ | undefined;
let observedTime = 0; // performance.now() when observedRecord last changed
const isLeader = () => observedRecord?.holderIdentity === identity;
const isLeaseValid = (now: number) => observedTime + leaseDurationMs > now;
const setObserved = (r: Record_) => {
  observedRecord = r;
  observedTime = performance.now();
};
const same = (a?: Record_, b?: Record_) => JSON.stringify(a) === JSON.stringify(b);

/** tryAcquireOrRenew, numbered as in client-go. */
async function tryAcquireOrRenew(): Promise<boolean> {
  const now = microNow();
  const record: Record_ = { holderIdentity: identity, leaseDurationSeconds: Math.floor(leaseDurationMs / 1000), renewTime: now, acquireTime: now, leaderTransitions: 0 };
  // 1. fast path for the leader to update optimistically assuming that the record observed
  //    last time is the current version.
  if (isLeader() && isLeaseValid(performance.now())) {
    record.acquireTime = observedRecord!.acquireTime;
    record.leaderTransitions = observedRecord!.leaderTransitions;
    try {
      await lock.update(record);
      setObserved(record);
      return true;
    } catch {
      // falling back to slow path
    }
  }
  // 2. obtain or create the ElectionRecord
  let old: Record_;
  try {
    old = await lock.get();
  } catch (err) {
    if (!(err instanceof NotFound)) return false;
    try {
      await lock.create(record);
    } catch {
      return false;
    }
    setObserved(record);
    return true;
  }
  // 3. Record obtained, check the Identity & Time
  if (!same(observedRecord, old)) setObserved(old);
  if (old.holderIdentity.length > 0 && isLeaseValid(performance.now()) && !isLeader()) return false;
  // 4. We're going to try to update. The leaderElectionRecord is set to its default here.
  if (isLeader()) {
    record.acquireTime = old.acquireTime;
    record.leaderTransitions = old.leaderTransitions;
  } else {
    record.leaderTransitions = old.leaderTransitions + 1;
  }
  try {
    await lock.update(record);
  } catch {
    return false;
  }
  setObserved(record);
  return true;
}

let cancelled = false;
let leading = false;

/** release, as client-go's (0.29+): no holder, leaseDurationSeconds 1, times now. */
async function release(): Promise<void> {
  if (!isLeader()) return;
  const now = microNow();
  const r: Record_ = { holderIdentity: '', leaseDurationSeconds: 1, renewTime: now, acquireTime: now, leaderTransitions: observedRecord!.leaderTransitions };
  try {
    await lock.update(r);
    setObserved(r);
  } catch {
    // Failed to release lock
  }
}

/** withDeadline: tryAcquireOrRenew raced against the renew deadline (the select in renew()). */
function withDeadline(p: Promise<boolean>, deadline: number): Promise<boolean | 'timeout'> {
  return Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), Math.max(0, deadline - performance.now())))]);
}

async function run(): Promise<void> {
  // acquire: JitterUntil(tryAcquireOrRenew, RetryPeriod, JitterFactor, sliding)
  for (;;) {
    if (cancelled) process.exit(0);
    if (await tryAcquireOrRenew()) break;
    await sleep(retryPeriodMs + Math.random() * JITTER_FACTOR * retryPeriodMs);
  }
  if (cancelled) {
    await release();
    process.exit(0);
  }
  leading = true;
  log('start');
  // renew: wait.Until(…, RetryPeriod) around PollImmediateUntil(RetryPeriod, …, RenewDeadline)
  for (;;) {
    const deadline = performance.now() + renewDeadlineMs;
    let ok = false;
    while (!cancelled && performance.now() < deadline) {
      const r = await withDeadline(tryAcquireOrRenew(), deadline);
      if (r === true) {
        ok = true;
        break;
      }
      if (r === 'timeout') break;
      await sleep(Math.min(retryPeriodMs, Math.max(0, deadline - performance.now())));
    }
    if (cancelled) return; // the SIGTERM handler stops the work and releases
    if (!ok) {
      leading = false;
      log('stop');
      await release(); // ReleaseOnCancel
      process.exit(3);
    }
    await sleep(retryPeriodMs);
  }
}

process.on('SIGTERM', () => {
  cancelled = true;
  if (!leading) return;
  leading = false;
  log('stop');
  void release().then(() => process.exit(0));
});

void run();
