/**
 * A FAKE Kubernetes API server — a stand-in, because no kube-apiserver (nor etcd-backed control
 * plane) can run on this machine. It serves only what the k8s store and kubectl's basic verbs
 * touch, and follows the real server's observable behaviour there:
 *
 *   - coordination.k8s.io/v1 Leases: GET / POST / PUT / DELETE / LIST (labelSelector k=v or k,
 *     fieldSelector metadata.name=X) under /apis/coordination.k8s.io/v1/namespaces/NS/leases;
 *   - one global, increasing resourceVersion (like etcd's revision), stamped on every write;
 *   - PUT with a stale metadata.resourceVersion → 409 Conflict; POST of an existing name → 409
 *     AlreadyExists; missing → 404 NotFound; all errors as Status bodies (kind Status, apiVersion
 *     v1, status Failure, reason, code, details);
 *   - DELETE → 200 with a Success Status naming the Lease (details name, group, kind "leases",
 *     uid), a DELETED watch event carrying the object at a new resourceVersion; DeleteOptions
 *     preconditions (uid, resourceVersion) that do not hold → 409 Conflict, worded as 1.36 words it;
 *   - what the real server rejects: a MicroTime without exactly six fractional digits or a
 *     non-integer leaseDurationSeconds / leaseTransitions (400, a decoding error), invalid names,
 *     non-positive leaseDurationSeconds, a name not matching the URL, invalid annotation keys or
 *     more than 256 KiB of annotations (422 Invalid);
 *   - watch (?watch=1): from `resourceVersion` (events after it are replayed from a bounded
 *     history; a version older than the history → an ERROR event with a 410 Expired Status, as
 *     after an etcd compaction), without one (or "0") synthetic ADDED events first; fieldSelector
 *     and labelSelector; timeoutSeconds ends the stream; newline-delimited JSON events;
 *   - bearer-token or client-certificate authentication (401 Unauthorized Status without either);
 *   - discovery (/api, /apis, /apis/coordination.k8s.io/v1, /version) so kubectl can talk to it.
 *
 * It runs as its own process over HTTPS (certificate made by the test with openssl), keeping
 * its state in a JSON file written on every change, so it can be SIGKILLed and restarted with
 * its objects and resourceVersion intact, and frozen with SIGSTOP. A test-only endpoint,
 * POST /fake/cut, drops every open connection (a cut network without a restart); another,
 * POST /fake/slow?ms=N, holds every write for N ms first, so a cut can catch writes in flight.
 * GET /fake/stats answers the requests served so far by verb (get, list, watch, create, update,
 * delete, other), for the bench: the server's own request counter, as Redis's MONITOR or
 * PostgreSQL's pg_stat_statements are for those stores. The /fake/ requests are not counted.
 *
 * Usage: node --import tsx infra/fakes/k8s-api.ts --port P --state FILE --cert F --key F --token T [--client-ca F] [--history N]
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';

type Obj = { apiVersion: string; kind: string; metadata: Record<string, any>; spec?: Record<string, any>; [k: string]: unknown };
interface Event { rv: number; type: 'ADDED' | 'MODIFIED' | 'DELETED'; key: string; object: Obj }
interface State { rv: number; objects: Record<string, Obj>; events: Event[] }

const args = new Map<string, string>();
for (let i = 2; i < process.argv.length; i += 2) args.set(process.argv[i]!.replace(/^--/, ''), process.argv[i + 1]!);
const port = Number(args.get('port'));
const statePath = args.get('state')!;
const token = args.get('token')!;
const historySize = Number(args.get('history') ?? 1000);

const state: State = existsSync(statePath) ? JSON.parse(readFileSync(statePath, 'utf8')) : { rv: 1000, objects: {}, events: [] };

function persist(): void {
  // Written before the answer is sent, like etcd's commit: a restart never loses an acknowledged write.
  writeFileSync(`${statePath}.tmp`, JSON.stringify(state));
  renameSync(`${statePath}.tmp`, statePath);
}

// ---- validation, as the real server does it ------------------------------------------------

const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const QUALIFIED = /^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$/;
const MICROTIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/;

class HttpError extends Error {
  constructor(readonly code: number, readonly reason: string, message: string, readonly details?: Record<string, unknown>) {
    super(message);
  }
}

function validKey(key: string): boolean {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : '';
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  return QUALIFIED.test(name) && (slash < 0 || (prefix.length <= 253 && SUBDOMAIN.test(prefix)));
}

/** decode: what Go's JSON decoding into the typed Lease rejects (400 BadRequest). */
function decode(obj: Obj): void {
  const spec = obj.spec ?? {};
  for (const f of ['leaseDurationSeconds', 'leaseTransitions']) {
    const v = spec[f];
    if (v !== undefined && v !== null && !(typeof v === 'number' && Number.isInteger(v) && Math.abs(v) < 2 ** 31)) {
      throw new HttpError(400, 'BadRequest', `json: cannot unmarshal ${typeof v === 'number' ? `number ${v}` : typeof v} into Go struct field LeaseSpec.spec.${f} of type int32`);
    }
  }
  for (const f of ['acquireTime', 'renewTime']) {
    const v = spec[f];
    if (v !== undefined && v !== null && !(typeof v === 'string' && MICROTIME.test(v) && Number.isFinite(Date.parse(v)))) {
      throw new HttpError(400, 'BadRequest', `parsing time ${JSON.stringify(v)} as "2006-01-02T15:04:05.000000Z07:00": cannot parse`);
    }
  }
  if (spec.holderIdentity !== undefined && spec.holderIdentity !== null && typeof spec.holderIdentity !== 'string') {
    throw new HttpError(400, 'BadRequest', 'json: cannot unmarshal into Go struct field LeaseSpec.spec.holderIdentity of type string');
  }
}

/** validate: the API's validation rules (422 Invalid). */
function validate(obj: Obj, name: string): void {
  const causes: { field: string; message: string }[] = [];
  if (!(name.length <= 253 && SUBDOMAIN.test(name))) causes.push({ field: 'metadata.name', message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'` });
  const d = obj.spec?.leaseDurationSeconds;
  if (typeof d === 'number' && d <= 0) causes.push({ field: 'spec.leaseDurationSeconds', message: 'Invalid value: must be greater than 0' });
  const t = obj.spec?.leaseTransitions;
  if (typeof t === 'number' && t < 0) causes.push({ field: 'spec.leaseTransitions', message: 'Invalid value: must be greater than or equal to 0' });
  const annotations = obj.metadata.annotations ?? {};
  let size = 0;
  for (const [k, v] of Object.entries(annotations)) {
    if (!validKey(k)) causes.push({ field: 'metadata.annotations', message: `Invalid value: "${k}": name part must consist of alphanumeric characters, '-', '_' or '.'` });
    if (typeof v !== 'string') throw new HttpError(400, 'BadRequest', 'json: cannot unmarshal into Go struct field ObjectMeta.metadata.annotations of type string');
    size += k.length + v.length;
  }
  if (size > 256 * 1024) causes.push({ field: 'metadata.annotations', message: 'Too long: must have at most 262144 bytes' });
  for (const [k, v] of Object.entries(obj.metadata.labels ?? {})) {
    if (!validKey(k) || typeof v !== 'string' || (v !== '' && !/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/.test(v)) || v.length > 63) {
      causes.push({ field: 'metadata.labels', message: `Invalid value: "${String(v)}"` });
    }
  }
  if (causes.length) {
    throw new HttpError(422, 'Invalid', `Lease.coordination.k8s.io "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`, { name, group: 'coordination.k8s.io', kind: 'Lease', causes });
  }
}

// ---- the API ------------------------------------------------------------------------------

const LEASES = /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/;
const watchers = new Set<{ match: (e: Event) => boolean; send: (e: Event) => void }>();

function status(code: number, reason: string, message: string, details?: Record<string, unknown>) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: code < 400 ? 'Success' : 'Failure', message, reason, details, code };
}

function notFound(name: string) {
  return new HttpError(404, 'NotFound', `leases.coordination.k8s.io "${name}" not found`, { name, group: 'coordination.k8s.io', kind: 'leases' });
}

function record(type: Event['type'], key: string, object: Obj): void {
  const event: Event = { rv: Number(object.metadata.resourceVersion), type, key, object };
  state.events.push(event);
  if (state.events.length > historySize) state.events.splice(0, state.events.length - historySize);
  persist();
  for (const w of watchers) if (w.match(event)) w.send(event);
}

function selectorMatch(query: URLSearchParams): (o: Obj) => boolean {
  const field = query.get('fieldSelector');
  const label = query.get('labelSelector');
  const fieldName = field ? /^metadata\.name=(.*)$/.exec(field)?.[1] : undefined;
  if (field && fieldName === undefined) throw new HttpError(400, 'BadRequest', `"${field}" is not a known field selector: only "metadata.name", "metadata.namespace"`);
  const labels = label ? label.split(',').map((p) => p.split('=')) : [];
  return (o) =>
    (fieldName === undefined || o.metadata.name === fieldName) &&
    labels.every(([k, v]) => (v === undefined ? o.metadata.labels?.[k!] !== undefined : o.metadata.labels?.[k!] === v));
}

async function body(req: IncomingMessage): Promise<Obj> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  try {
    const o = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (!o || typeof o !== 'object' || typeof o.metadata !== 'object') throw new Error('no metadata');
    return o;
  } catch (err) {
    throw new HttpError(400, 'BadRequest', `the body of the request was in an unknown format: ${(err as Error).message}`);
  }
}

/** deleteOptions reads a DELETE's optional body (a v1 DeleteOptions, as kubectl and client-go send it). */
async function deleteOptions(req: IncomingMessage): Promise<{ preconditions?: { uid?: string | null; resourceVersion?: string | null } }> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (!text) return {};
  try {
    const o = JSON.parse(text);
    if (!o || typeof o !== 'object' || Array.isArray(o)) throw new Error('not an object');
    return o;
  } catch (err) {
    throw new HttpError(400, 'BadRequest', `the body of the request was in an unknown format: ${(err as Error).message}`);
  }
}

function stamp(obj: Obj, ns: string, name: string, old?: Obj): Obj {
  state.rv += 1;
  const metadata: Record<string, any> = { ...obj.metadata, name, namespace: ns, resourceVersion: String(state.rv), uid: old?.metadata.uid ?? randomUUID(), creationTimestamp: old?.metadata.creationTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z') };
  delete metadata.managedFields;
  if (metadata.annotations && Object.keys(metadata.annotations).length === 0) delete metadata.annotations;
  if (metadata.labels && Object.keys(metadata.labels).length === 0) delete metadata.labels;
  return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata, spec: obj.spec ?? {} };
}

/** Test-only: writes wait this long before they are applied (POST /fake/slow?ms=N), so a cut can catch one in flight. */
let writeDelayMs = 0;

async function leases(req: IncomingMessage, res: ServerResponse, url: URL, ns: string, name?: string): Promise<void> {
  if (writeDelayMs > 0 && (req.method === 'PUT' || req.method === 'POST')) await new Promise((r) => setTimeout(r, writeDelayMs));
  // A write whose connection was cut meanwhile is still applied (the harder case for the
  // client: its write took effect, yet it saw only an error).
  const send = (code: number, o: unknown) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(o));
  };
  if (!LABEL.test(ns)) throw new HttpError(404, 'NotFound', `namespaces "${ns}" not found`);
  const key = (n: string) => `${ns}/${n}`;
  const q = url.searchParams;
  if (req.method === 'GET' && !name && (q.get('watch') === '1' || q.get('watch') === 'true')) return watch(req, res, ns, q);
  if (req.method === 'GET' && !name) {
    const match = selectorMatch(q);
    const items = Object.entries(state.objects).filter(([k, o]) => k.startsWith(`${ns}/`) && match(o)).map(([, o]) => o).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    return send(200, { kind: 'LeaseList', apiVersion: 'coordination.k8s.io/v1', metadata: { resourceVersion: String(state.rv) }, items });
  }
  if (req.method === 'GET') {
    const o = state.objects[key(name!)];
    if (!o) throw notFound(name!);
    return send(200, o);
  }
  if (req.method === 'POST' && !name) {
    const o = await body(req);
    decode(o);
    const n = String(o.metadata.name ?? '');
    if (o.metadata.namespace && o.metadata.namespace !== ns) throw new HttpError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request');
    if (!n) throw new HttpError(422, 'Invalid', 'Lease.coordination.k8s.io "" is invalid: metadata.name: Required value: name or generateName is required');
    validate(o, n);
    if (state.objects[key(n)]) throw new HttpError(409, 'AlreadyExists', `leases.coordination.k8s.io "${n}" already exists`, { name: n, group: 'coordination.k8s.io', kind: 'leases' });
    if (o.metadata.resourceVersion) throw new HttpError(500, 'InternalError', 'resourceVersion should not be set on objects to be created');
    const created = stamp(o, ns, n);
    state.objects[key(n)] = created;
    record('ADDED', key(n), created);
    return send(201, created);
  }
  if (req.method === 'PUT' && name) {
    const o = await body(req);
    decode(o);
    if (o.metadata.name !== name) throw new HttpError(400, 'BadRequest', `the name of the object (${String(o.metadata.name)}) does not match the name on the URL (${name})`);
    validate(o, name);
    const old = state.objects[key(name)];
    if (!old) throw notFound(name);
    const rv = o.metadata.resourceVersion;
    if (rv !== undefined && rv !== '' && rv !== old.metadata.resourceVersion) {
      throw new HttpError(409, 'Conflict', `Operation cannot be fulfilled on leases.coordination.k8s.io "${name}": the object has been modified; please apply your changes to the latest version and try again`, { name, group: 'coordination.k8s.io', kind: 'leases' });
    }
    const updated = stamp(o, ns, name, old);
    state.objects[key(name)] = updated;
    record('MODIFIED', key(name), updated);
    return send(200, updated);
  }
  if (req.method === 'DELETE' && name) {
    const options = await deleteOptions(req);
    const old = state.objects[key(name)];
    if (!old) throw notFound(name);
    // Preconditions (DeleteOptions.preconditions), checked as the storage layer does: uid first.
    const pre = options.preconditions ?? {};
    // Worded as kube-apiserver 1.36 words them (checked against the real server: test/stores/k8s/kubectl.test.ts).
    const failed =
      pre.uid != null && pre.uid !== old.metadata.uid ? `the UID in the precondition (${pre.uid}) does not match the UID in record (${old.metadata.uid}). The object might have been deleted and then recreated`
      : pre.resourceVersion != null && pre.resourceVersion !== old.metadata.resourceVersion ? `the ResourceVersion in the precondition (${pre.resourceVersion}) does not match the ResourceVersion in record (${old.metadata.resourceVersion}). The object might have been modified`
      : undefined;
    if (failed) throw new HttpError(409, 'Conflict', `Operation cannot be fulfilled on Lease.coordination.k8s.io "${name}": ${failed}`, { name, group: 'coordination.k8s.io', kind: 'Lease' });
    delete state.objects[key(name)];
    state.rv += 1;
    // Watchers get the object as it was, at the deletion's resourceVersion.
    const gone = { ...old, metadata: { ...old.metadata, resourceVersion: String(state.rv) } };
    record('DELETED', key(name), gone);
    // The generic registry's answer for a resource that does not return the deleted object (Leases
    // do not): a Success Status naming it — kind holds the resource, no code, reason or message.
    return send(200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { name, group: 'coordination.k8s.io', kind: 'leases', uid: old.metadata.uid } });
  }
  throw new HttpError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
}

function watch(req: IncomingMessage, res: ServerResponse, ns: string, q: URLSearchParams): void {
  const match = selectorMatch(q);
  const matches = (e: Event) => e.key.startsWith(`${ns}/`) && match(e.object);
  const from = q.get('resourceVersion');
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
  res.flushHeaders();
  const write = (e: { type: string; object: unknown }) => {
    if (!res.writableEnded && !res.destroyed) res.write(`${JSON.stringify(e)}\n`);
  };
  const timeoutS = Number(q.get('timeoutSeconds') ?? 1800);
  const timer = setTimeout(() => {
    done();
    res.end();
  }, timeoutS * 1000);
  res.on('error', () => done());
  const w = { match: matches, send: (e: Event) => write({ type: e.type, object: e.object }) };
  const done = () => {
    clearTimeout(timer);
    watchers.delete(w);
  };
  res.on('close', done);
  if (!from || from === '0') {
    for (const [k, o] of Object.entries(state.objects)) if (k.startsWith(`${ns}/`) && match(o)) write({ type: 'ADDED', object: o });
  } else {
    const v = Number(from);
    const oldest = state.events[0]?.rv ?? state.rv + 1;
    // History holds every event after `oldest - 1`; asking from before that cannot be served.
    if (!Number.isInteger(v) || v < oldest - 1) {
      write({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from} (${oldest - 1})`) });
      done();
      res.end();
      return;
    }
    for (const e of state.events) if (e.rv > v && matches(e)) write({ type: e.type, object: e.object });
  }
  watchers.add(w);
}

function discovery(path: string): unknown {
  if (path === '/version') return { major: '1', minor: '30', gitVersion: 'v1.30.0-baton-fake', platform: 'linux/amd64' };
  if (path === '/api') return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${port}` }] };
  if (path === '/api/v1') return { kind: 'APIResourceList', groupVersion: 'v1', resources: [] };
  if (path === '/apis') {
    const v = { groupVersion: 'coordination.k8s.io/v1', version: 'v1' };
    return { kind: 'APIGroupList', apiVersion: 'v1', groups: [{ name: 'coordination.k8s.io', versions: [v], preferredVersion: v }] };
  }
  if (path === '/apis/coordination.k8s.io/v1') {
    return {
      kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'coordination.k8s.io/v1',
      resources: [{ name: 'leases', singularName: 'lease', namespaced: true, kind: 'Lease', verbs: ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'] }],
    };
  }
  return undefined;
}

const sockets = new Set<Socket>();
/** Requests served, by Kubernetes verb (what an audit log would name them). */
const requests: Record<string, number> = {};

function verbOf(method: string | undefined, url: URL): string {
  const m = LEASES.exec(url.pathname);
  if (!m) return 'other';
  if (method === 'GET') return url.searchParams.get('watch') === '1' || url.searchParams.get('watch') === 'true' ? 'watch' : m[2] === undefined ? 'list' : 'get';
  return ({ POST: 'create', PUT: 'update', DELETE: 'delete' } as Record<string, string>)[method ?? ''] ?? 'other';
}

// Client certificates signed by --client-ca authenticate too (as the real server's --client-ca-file).
const clientCa = args.get('client-ca');
const server = https.createServer({ cert: readFileSync(args.get('cert')!), key: readFileSync(args.get('key')!), ...(clientCa ? { ca: readFileSync(clientCa), requestCert: true, rejectUnauthorized: false } : {}) }, (req, res) => {
  const url = new URL(req.url ?? '/', `https://127.0.0.1:${port}`);
  const fail = (err: unknown) => {
    const e = err instanceof HttpError ? err : new HttpError(500, 'InternalError', String(err));
    if (res.headersSent) return res.end();
    res.writeHead(e.code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(status(e.code, e.reason, e.message, e.details)));
  };
  const certified = clientCa !== undefined && (req.socket as import('node:tls').TLSSocket).authorized === true;
  if (req.headers.authorization !== `Bearer ${token}` && !certified) return fail(new HttpError(401, 'Unauthorized', 'Unauthorized'));
  if (req.method === 'GET' && url.pathname === '/fake/stats') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ requests }));
  }
  if (!url.pathname.startsWith('/fake/')) {
    const verb = verbOf(req.method, url);
    requests[verb] = (requests[verb] ?? 0) + 1;
  }
  if (req.method === 'POST' && url.pathname === '/fake/slow') {
    writeDelayMs = Number(url.searchParams.get('ms') ?? 0);
    res.writeHead(200).end('slow\n');
    return;
  }
  if (req.method === 'POST' && url.pathname === '/fake/cut') {
    res.writeHead(200).end('cut\n', () => setImmediate(() => sockets.forEach((s) => s.destroy())));
    return;
  }
  const found = discovery(url.pathname);
  if (found && req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify(found));
  }
  const m = LEASES.exec(url.pathname);
  if (!m) return fail(new HttpError(404, 'NotFound', 'the server could not find the requested resource'));
  leases(req, res, url, decodeURIComponent(m[1]!), m[2] === undefined ? undefined : decodeURIComponent(m[2])).catch(fail);
});
server.on('secureConnection', (s: Socket) => {
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`k8s fake listening on https://127.0.0.1:${port} (resourceVersion ${state.rv})\n`));
