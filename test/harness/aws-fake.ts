/**
 * AwsFake: a stateful fake of the three AWS APIs baton's `aws` module uses, for tests only —
 * no AWS emulator can run here. It is an HTTP server on 127.0.0.1 that speaks the real wire
 * protocols, so the real AWS SDK v3 talks to it unchanged through its standard endpoint settings:
 *
 * - Auto Scaling (Query protocol, Version 2011-01-01, XML in `<XResponse><XResult>`, errors as
 *   `<ErrorResponse><Error><Code>`): DescribeAutoScalingInstances (MaxRecords ≤ 50),
 *   DescribeAutoScalingGroups (MaxRecords ≤ 100, tag filters), CompleteLifecycleAction.
 * - EC2 (EC2 Query protocol, Version 2016-11-15, flattened `Filter.N.Value.M` lists, lower-camel
 *   XML with `<item>` lists, errors as `<Response><Errors><Error>`): DescribeTags
 *   (MaxResults 5–1000), CreateTags, DeleteTags.
 * - Instance metadata, IMDSv2 only (PUT /latest/api/token with a TTL header, then GETs carrying
 *   the token; 401 without it), one listener per simulated instance because the real service
 *   answers for the instance that asks.
 *
 * State is kept the way AWS keeps it: terminated instances leave the group but keep their tags
 * for a while; `DescribeAutoScalingInstances` reports health as HEALTHY/UNHEALTHY while
 * `DescribeAutoScalingGroups` says Healthy/Unhealthy. Every list call pages with an opaque
 * NextToken bound to the query that produced it. Chaos knobs: `throttleRate` (Throttling /
 * RequestLimitExceeded answers), `failNext` (a given error for the next calls of an action),
 * `maxPage` (a server-side page cap, as AWS may return fewer items than asked for), and
 * `jitterMs` (random latency, to interleave concurrent callers).
 *
 * Stateful refusals: `tagWritesOnTerminated = 'IncorrectInstanceState'` makes CreateTags and
 * DeleteTags refuse a request naming a terminated instance (the whole request, as EC2 validates
 * every resource before it changes any); `deny(action, ids)` answers 403 — UnauthorizedOperation
 * from EC2, AccessDenied from Auto Scaling, as each does — for calls naming those instances (an
 * IAM policy scoped by resource tag). DescribeAutoScalingGroups for a group that does not exist
 * answers an empty list, not an error, as AWS does.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';

export type LifecycleState =
  | 'Pending' | 'Pending:Wait' | 'Pending:Proceed' | 'InService' | 'Standby' | 'EnteringStandby'
  | 'Terminating' | 'Terminating:Wait' | 'Terminating:Proceed' | 'Detaching' | 'Detached';

/** FakeInstance is one EC2 instance, with its Auto Scaling view. */
export interface FakeInstance {
  id: string;
  group: string | null;
  lifecycle: LifecycleState;
  healthy: boolean;
  terminated: boolean;
  tags: Map<string, string>;
  /** Instance metadata tags enabled (otherwise /tags/instance answers 404). */
  metadataTags: boolean;
  az: string;
}

/** FakeGroup is one Auto Scaling group. */
export interface FakeGroup {
  name: string;
  tags: Map<string, string>;
  hooks: Set<string>;
}

/** A lifecycle action someone completed. */
export interface CompletedAction {
  group: string;
  hook: string;
  instanceId: string;
  result: string;
}

type Params = Map<string, string>;
class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

const AS_NS = 'http://autoscaling.amazonaws.com/doc/2011-01-01/';
const EC2_NS = 'http://ec2.amazonaws.com/doc/2016-11-15/';

/** AwsFake is the fake; `await AwsFake.start()`, then `stop()` in `after`. */
export class AwsFake {
  readonly region = 'eu-west-3';
  readonly account = '123456789012';
  readonly groups = new Map<string, FakeGroup>();
  readonly instances = new Map<string, FakeInstance>();
  readonly completed: CompletedAction[] = [];
  /** Every API call received, in order (Action and its parameters). */
  readonly calls: { action: string; params: Params }[] = [];
  /** Fraction of API calls answered with a throttling error (drawn from a seeded generator). */
  throttleRate = 0;
  /** Random source for throttling: seeded, so a sequential scenario throttles the same calls every run. */
  random = seeded(42);
  throttled = 0;
  /** Server-side cap on page sizes (AWS may return fewer items than MaxRecords/MaxResults). */
  maxPage = Infinity;
  /** Random latency added to each API answer, in ms. */
  jitterMs = 0;
  /** Highest number of instances of a group that carried `watchTag` at the same moment. */
  readonly maxTagged = new Map<string, number>();
  watchTag = 'app:isLeader';
  /** 'IncorrectInstanceState': CreateTags/DeleteTags naming a terminated instance are refused. */
  tagWritesOnTerminated: 'allow' | 'IncorrectInstanceState' = 'allow';
  private readonly denials: { action: string; ids: Set<string> | null }[] = [];
  private readonly failures: { action: string; code: string; status: number; times: number; after: number }[] = [];
  private readonly holds: { action: string; arrived: () => void; gate: Promise<void> }[] = [];
  private readonly imds = new Map<string, Server>();
  private readonly imdsUrls = new Map<string, Promise<string>>();
  private readonly tokens = new Set<string>();
  private nextId = 0x100000;
  private seq = 0;

  private constructor(private readonly server: Server, readonly url: string) {}

  /** start listens on a free loopback port. */
  static async start(): Promise<AwsFake> {
    let fake!: AwsFake;
    const server = createServer((req, res) => void fake.onApi(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as { port: number };
    fake = new AwsFake(server, `http://127.0.0.1:${port}`);
    return fake;
  }

  /** closedEndpoint is a loopback URL nothing listens on (connections are refused). */
  static async closedEndpoint(): Promise<string> {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
    const { port } = s.address() as { port: number };
    await new Promise<void>((r) => s.close(() => r()));
    return `http://127.0.0.1:${port}`;
  }

  /** stop closes the API listener and every metadata listener. */
  async stop(): Promise<void> {
    const all = [this.server, ...this.imds.values()];
    await Promise.all(all.map((s) => new Promise<void>((r) => { s.closeAllConnections(); s.close(() => r()); })));
  }

  // ---- Scenario controls -------------------------------------------------------------------

  /** createGroup adds an empty group. */
  createGroup(name: string, options: { tags?: Record<string, string>; hooks?: string[] } = {}): FakeGroup {
    const g = { name, tags: new Map(Object.entries(options.tags ?? {})), hooks: new Set(options.hooks ?? []) };
    this.groups.set(name, g);
    return g;
  }

  /** launch adds `count` instances to a group (InService unless told), with increasing ids. */
  launch(group: string, count = 1, options: { lifecycle?: LifecycleState; ids?: string[]; metadataTags?: boolean } = {}): string[] {
    if (!this.groups.has(group)) throw new Error(`fake: no group ${group}`);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const id = options.ids?.[i] ?? `i-0${(this.nextId++).toString(16).padStart(16, '0')}`;
      this.instances.set(id, {
        id, group, lifecycle: options.lifecycle ?? 'InService', healthy: true, terminated: false,
        tags: new Map([['aws:autoscaling:groupName', group]]), metadataTags: options.metadataTags ?? true, az: `${this.region}a`,
      });
      ids.push(id);
    }
    return ids;
  }

  /** instance returns an instance or throws. */
  instance(id: string): FakeInstance {
    const i = this.instances.get(id);
    if (!i) throw new Error(`fake: no instance ${id}`);
    return i;
  }

  /** terminate ends an instance: it leaves its group and keeps its tags, as on AWS. */
  terminate(id: string): void {
    const i = this.instance(id);
    i.terminated = true;
    i.group = null;
    i.lifecycle = 'Detached';
  }

  /** members lists a group's current instance ids (any lifecycle state). */
  members(group: string): string[] {
    return [...this.instances.values()].filter((i) => i.group === group).map((i) => i.id).sort();
  }

  /** tagged lists the instances (terminated ones too) carrying `key`, optionally with `value`. */
  tagged(key = this.watchTag, value?: string): string[] {
    return [...this.instances.values()].filter((i) => i.tags.has(key) && (value === undefined || i.tags.get(key) === value)).map((i) => i.id).sort();
  }

  /** failNext makes `times` calls of `action` fail with `code`, after letting `after` succeed. */
  failNext(action: string, code: string, options: { times?: number; status?: number; after?: number } = {}): void {
    this.failures.push({ action, code, status: options.status ?? 400, times: options.times ?? 1, after: options.after ?? 0 });
  }

  /**
   * deny refuses `action` with 403 for calls that name any of `ids` (every call without ids),
   * until `allow(action)`: what an IAM policy scoped by resource or tag does.
   */
  deny(action: string, ids?: readonly string[]): void {
    this.denials.push({ action, ids: ids ? new Set(ids) : null });
  }

  /** allow lifts every deny of `action`. */
  allow(action: string): void {
    for (let i = this.denials.length - 1; i >= 0; i--) if (this.denials[i]!.action === action) this.denials.splice(i, 1);
  }

  /**
   * hold parks the next call of `action` before it takes effect: `reached` resolves when it
   * arrives, `release()` lets it go on. Used to force one interleaving of concurrent callers.
   */
  hold(action: string): { reached: Promise<void>; release: () => void } {
    let arrived!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((r) => (arrived = r));
    const gate = new Promise<void>((r) => (release = r));
    this.holds.push({ action, arrived, gate });
    return { reached, release };
  }

  /** metadataEndpoint starts (once) the metadata listener that answers as `instanceId`. */
  async metadataEndpoint(instanceId: string): Promise<string> {
    // Kept as a promise at once: concurrent callers for one instance share one listener (two
    // listeners would leave one open after stop()).
    let url = this.imdsUrls.get(instanceId);
    if (!url) {
      const server = createServer((req, res) => void this.onImds(instanceId, req, res));
      this.imds.set(instanceId, server);
      url = new Promise<string>((r) => server.listen(0, '127.0.0.1', () => r(`http://127.0.0.1:${(server.address() as { port: number }).port}`)));
      this.imdsUrls.set(instanceId, url);
    }
    return url;
  }

  /**
   * env is the environment a process on `instanceId` sees: both API endpoints and the metadata
   * endpoint point here, credentials are dummies, and no AWS setting of the host leaks in.
   */
  async env(instanceId?: string, base: NodeJS.ProcessEnv = process.env): Promise<NodeJS.ProcessEnv> {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(base)) if (!k.startsWith('AWS_') && !k.startsWith('BATON_')) env[k] = v;
    return {
      ...env,
      AWS_ENDPOINT_URL_AUTO_SCALING: this.url,
      AWS_ENDPOINT_URL_EC2: this.url,
      AWS_EC2_METADATA_SERVICE_ENDPOINT: instanceId ? await this.metadataEndpoint(instanceId) : await AwsFake.closedEndpoint(),
      AWS_ACCESS_KEY_ID: 'AKIDFAKEFAKEFAKE',
      AWS_SECRET_ACCESS_KEY: 'fake-secret',
      AWS_CONFIG_FILE: '/nonexistent/aws-config',
      AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/aws-credentials',
      AWS_MAX_ATTEMPTS: '10',
    };
  }

  // ---- Instance metadata (IMDSv2) ----------------------------------------------------------

  private onImds(instanceId: string, req: IncomingMessage, res: ServerResponse): void {
    const send = (status: number, body = '') => {
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(body);
    };
    const path = decodeURIComponent((req.url ?? '/').split('?')[0]!);
    if (req.method === 'PUT' && path === '/latest/api/token') {
      const ttl = Number(req.headers['x-aws-ec2-metadata-token-ttl-seconds']);
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > 21600) return send(400);
      const token = randomBytes(24).toString('base64');
      this.tokens.add(token);
      return send(200, token);
    }
    if (req.method !== 'GET') return send(405);
    if (!this.tokens.has(String(req.headers['x-aws-ec2-metadata-token'] ?? ''))) return send(401);
    const inst = this.instances.get(instanceId);
    if (!inst) return send(404);
    const md = '/latest/meta-data/';
    if (path === `${md}instance-id`) return send(200, inst.id);
    if (path === `${md}placement/region`) return send(200, this.region);
    if (path === `${md}placement/availability-zone`) return send(200, inst.az);
    if (path === `${md}autoscaling/target-lifecycle-state`) {
      if (inst.group === null && !inst.terminated) return send(404);
      return send(200, targetLifecycleState(inst));
    }
    if (path === `${md}tags/instance` || path === `${md}tags/instance/`) {
      if (!inst.metadataTags) return send(404);
      return send(200, [...inst.tags.keys()].filter((k) => !k.startsWith('aws:')).join('\n'));
    }
    if (path.startsWith(`${md}tags/instance/`)) {
      const key = path.slice(`${md}tags/instance/`.length);
      if (!inst.metadataTags || !inst.tags.has(key) || key.startsWith('aws:')) return send(404);
      return send(200, inst.tags.get(key)!);
    }
    return send(404);
  }

  // ---- The Query APIs ----------------------------------------------------------------------

  private async onApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const params: Params = new Map(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
    const action = params.get('Action') ?? '';
    const ec2 = params.get('Version') === '2016-11-15';
    this.calls.push({ action, params });
    if (this.jitterMs > 0) await new Promise((r) => setTimeout(r, Math.random() * this.jitterMs));
    const held = this.holds.findIndex((h) => h.action === action);
    if (held >= 0) {
      const [h] = this.holds.splice(held, 1);
      h!.arrived();
      await h!.gate;
    }
    try {
      if (req.method !== 'POST' || !String(req.headers.authorization ?? '').startsWith('AWS4-HMAC-SHA256 ')) {
        throw new ApiError(403, ec2 ? 'AuthFailure' : 'InvalidClientTokenId', 'request is not signed');
      }
      if (this.throttleRate > 0 && this.random() < this.throttleRate) {
        this.throttled++;
        throw ec2 ? new ApiError(503, 'RequestLimitExceeded', 'Request limit exceeded.') : new ApiError(400, 'Throttling', 'Rate exceeded');
      }
      const f = this.failures.find((x) => x.action === action && x.times > 0);
      if (f && f.after > 0) f.after--;
      else if (f) {
        f.times--;
        throw new ApiError(f.status, f.code, `injected failure of ${action}`);
      }
      this.checkDenied(action, params, ec2);
      const body = ec2 ? this.ec2(action, params) : this.autoScaling(action, params);
      res.writeHead(200, { 'content-type': 'text/xml;charset=UTF-8' });
      res.end(`<?xml version="1.0" encoding="UTF-8"?>\n${body}`);
    } catch (err) {
      const e = err instanceof ApiError ? err : new ApiError(500, 'InternalFailure', String(err));
      const rid = this.requestId();
      const xml = ec2
        ? `<Response><Errors><Error><Code>${esc(e.code)}</Code><Message>${esc(e.message)}</Message></Error></Errors><RequestID>${rid}</RequestID></Response>`
        : `<ErrorResponse xmlns="${AS_NS}"><Error><Type>${e.status >= 500 ? 'Receiver' : 'Sender'}</Type><Code>${esc(e.code)}</Code><Message>${esc(e.message)}</Message></Error><RequestId>${rid}</RequestId></ErrorResponse>`;
      res.writeHead(e.status, { 'content-type': 'text/xml' });
      res.end(xml);
    }
  }

  private checkDenied(action: string, p: Params, ec2: boolean): void {
    const named = [...list(p, 'ResourceId.'), ...list(p, 'InstanceIds.member.'), p.get('InstanceId') ?? ''].filter(Boolean);
    const hit = this.denials.find((d) => d.action === action && (d.ids === null || named.some((id) => d.ids!.has(id))));
    if (!hit) return;
    const who = `arn:aws:sts::${this.account}:assumed-role/baton/test`;
    if (ec2) throw new ApiError(403, 'UnauthorizedOperation', `You are not authorized to perform this operation. User: ${who} is not authorized to perform: ec2:${action}`);
    throw new ApiError(403, 'AccessDenied', `User: ${who} is not authorized to perform: autoscaling:${action}`);
  }

  private autoScaling(action: string, p: Params): string {
    if (p.get('Version') !== '2011-01-01') throw new ApiError(400, 'InvalidAction', `unknown Version ${p.get('Version')}`);
    const wrap = (inner: string) =>
      `<${action}Response xmlns="${AS_NS}"><${action}Result>${inner}</${action}Result><ResponseMetadata><RequestId>${this.requestId()}</RequestId></ResponseMetadata></${action}Response>`;
    switch (action) {
      case 'DescribeAutoScalingInstances': {
        const ids = list(p, 'InstanceIds.member.');
        if (ids.length > 50) throw new ApiError(400, 'ValidationError', 'InstanceIds: at most 50');
        const max = maxParam(p, 'MaxRecords', 1, 50, 50);
        const all = [...this.instances.values()].filter((i) => i.group !== null && (ids.length === 0 || ids.includes(i.id))).sort(byId);
        const { items, next } = this.page(action, p, all, max);
        const rows = items.map((i) => `<member><InstanceId>${i.id}</InstanceId><InstanceType>t3.micro</InstanceType><AutoScalingGroupName>${esc(i.group!)}</AutoScalingGroupName><AvailabilityZone>${i.az}</AvailabilityZone><LifecycleState>${i.lifecycle}</LifecycleState><HealthStatus>${i.healthy ? 'HEALTHY' : 'UNHEALTHY'}</HealthStatus><ProtectedFromScaleIn>false</ProtectedFromScaleIn></member>`);
        return wrap(`<AutoScalingInstances>${rows.join('')}</AutoScalingInstances>${next ? `<NextToken>${next}</NextToken>` : ''}`);
      }
      case 'DescribeAutoScalingGroups': {
        const names = list(p, 'AutoScalingGroupNames.member.');
        const filters = queryFilters(p, 'Filters.member.', 'Name', 'Values.member.');
        const max = maxParam(p, 'MaxRecords', 1, 100, 50);
        const all = [...this.groups.values()]
          .filter((g) => names.length === 0 || names.includes(g.name))
          .filter((g) => filters.every(({ name, values }) => groupMatches(g, name, values)))
          .sort((a, b) => (a.name < b.name ? -1 : 1));
        const { items, next } = this.page(action, p, all, max);
        return wrap(`<AutoScalingGroups>${items.map((g) => this.groupXml(g)).join('')}</AutoScalingGroups>${next ? `<NextToken>${next}</NextToken>` : ''}`);
      }
      case 'CompleteLifecycleAction': {
        const group = p.get('AutoScalingGroupName') ?? '';
        const hook = p.get('LifecycleHookName') ?? '';
        const id = p.get('InstanceId') ?? '';
        const result = p.get('LifecycleActionResult') ?? '';
        const g = this.groups.get(group);
        if (!g || !g.hooks.has(hook)) throw new ApiError(400, 'ValidationError', `No Lifecycle Hook found with name ${hook} for group ${group}`);
        const inst = this.instances.get(id);
        if (!inst || inst.group !== group || !inst.lifecycle.endsWith(':Wait')) {
          throw new ApiError(400, 'ValidationError', `No active Lifecycle Action found with instance ID ${id}`);
        }
        if (result !== 'CONTINUE' && result !== 'ABANDON') throw new ApiError(400, 'ValidationError', 'LifecycleActionResult must be CONTINUE or ABANDON');
        this.completed.push({ group, hook, instanceId: id, result });
        inst.lifecycle = inst.lifecycle === 'Terminating:Wait' ? 'Terminating:Proceed' : 'Pending:Proceed';
        return wrap('');
      }
      default:
        throw new ApiError(400, 'InvalidAction', `fake: ${action} is not implemented`);
    }
  }

  private groupXml(g: FakeGroup): string {
    const inst = [...this.instances.values()].filter((i) => i.group === g.name).sort(byId);
    const members = inst.map((i) => `<member><InstanceId>${i.id}</InstanceId><InstanceType>t3.micro</InstanceType><AvailabilityZone>${i.az}</AvailabilityZone><LifecycleState>${i.lifecycle}</LifecycleState><HealthStatus>${i.healthy ? 'Healthy' : 'Unhealthy'}</HealthStatus><ProtectedFromScaleIn>false</ProtectedFromScaleIn></member>`);
    const tags = [...g.tags].map(([k, v]) => `<member><ResourceId>${esc(g.name)}</ResourceId><ResourceType>auto-scaling-group</ResourceType><Key>${esc(k)}</Key><Value>${esc(v)}</Value><PropagateAtLaunch>false</PropagateAtLaunch></member>`);
    return `<member><AutoScalingGroupName>${esc(g.name)}</AutoScalingGroupName><AutoScalingGroupARN>arn:aws:autoscaling:${this.region}:${this.account}:autoScalingGroup:00000000-0000-0000-0000-000000000000:autoScalingGroupName/${esc(g.name)}</AutoScalingGroupARN><MinSize>0</MinSize><MaxSize>2000</MaxSize><DesiredCapacity>${inst.length}</DesiredCapacity><DefaultCooldown>300</DefaultCooldown><AvailabilityZones><member>${this.region}a</member></AvailabilityZones><HealthCheckType>EC2</HealthCheckType><CreatedTime>2024-01-01T00:00:00.000Z</CreatedTime><Instances>${members.join('')}</Instances><Tags>${tags.join('')}</Tags></member>`;
  }

  private ec2(action: string, p: Params): string {
    const wrap = (inner: string) => `<${action}Response xmlns="${EC2_NS}"><requestId>${this.requestId()}</requestId>${inner}</${action}Response>`;
    switch (action) {
      case 'DescribeTags': {
        const filters = queryFilters(p, 'Filter.', 'Name', 'Value.');
        const max = maxParam(p, 'MaxResults', 5, 1000, 1000);
        const rows: { id: string; key: string; value: string }[] = [];
        for (const i of [...this.instances.values()].sort(byId)) {
          for (const [key, value] of [...i.tags].sort()) {
            if (filters.every((f) => tagMatches(i.id, key, value, f.name, f.values))) rows.push({ id: i.id, key, value });
          }
        }
        const { items, next } = this.page(action, p, rows, max);
        const xml = items.map((r) => `<item><resourceId>${r.id}</resourceId><resourceType>instance</resourceType><key>${esc(r.key)}</key><value>${esc(r.value)}</value></item>`);
        return wrap(`<tagSet>${xml.join('')}</tagSet>${next ? `<nextToken>${next}</nextToken>` : ''}`);
      }
      case 'CreateTags':
      case 'DeleteTags': {
        const ids = list(p, 'ResourceId.');
        if (ids.length === 0) throw new ApiError(400, 'MissingParameter', 'The request must contain the parameter resourceIdSet');
        const missing = ids.filter((id) => !this.instances.has(id));
        if (missing.length) throw new ApiError(400, 'InvalidInstanceID.NotFound', `The instance IDs '${missing.join(', ')}' do not exist`);
        const gone = ids.filter((id) => this.instances.get(id)!.terminated);
        if (gone.length && this.tagWritesOnTerminated === 'IncorrectInstanceState') {
          throw new ApiError(400, 'IncorrectInstanceState', `The instance '${gone[0]}' is not in a state from which it can be modified (terminated).`);
        }
        const tags: { key: string; value?: string }[] = [];
        for (let n = 1; p.has(`Tag.${n}.Key`); n++) tags.push({ key: p.get(`Tag.${n}.Key`)!, value: p.get(`Tag.${n}.Value`) });
        for (const id of ids) {
          const inst = this.instances.get(id)!;
          for (const t of tags) {
            if (t.key.startsWith('aws:')) throw new ApiError(400, 'InvalidParameterValue', 'Tag keys starting with aws: are reserved');
            if (action === 'CreateTags') inst.tags.set(t.key, t.value ?? '');
            else if (t.value === undefined || inst.tags.get(t.key) === t.value) inst.tags.delete(t.key);
          }
        }
        this.recordTagged();
        return wrap('<return>true</return>');
      }
      default:
        throw new ApiError(400, 'InvalidAction', `fake: ${action} is not implemented`);
    }
  }

  /** page cuts `all` after the position in NextToken; the token is bound to the query. */
  private page<T>(action: string, p: Params, all: T[], max: number): { items: T[]; next?: string } {
    const fingerprint = [...p].filter(([k]) => !['NextToken', 'MaxRecords', 'MaxResults'].includes(k)).map(([k, v]) => `${k}=${v}`).sort().join('&');
    let start = 0;
    const token = p.get('NextToken');
    if (token) {
      const [fp, at] = Buffer.from(token, 'base64url').toString('utf8').split('\n');
      if (fp !== `${action}?${fingerprint}` || !/^\d+$/.test(at ?? '')) {
        throw new ApiError(400, action === 'DescribeTags' ? 'InvalidParameterValue' : 'InvalidNextToken', 'The token is not valid for this request');
      }
      start = Number(at);
    }
    const size = Math.min(max, this.maxPage);
    const items = all.slice(start, start + size);
    const end = start + items.length;
    return { items, next: end < all.length ? Buffer.from(`${action}?${fingerprint}\n${end}`).toString('base64url') : undefined };
  }

  private recordTagged(): void {
    for (const g of this.groups.keys()) {
      const n = [...this.instances.values()].filter((i) => i.tags.get(this.watchTag) === g).length;
      this.maxTagged.set(g, Math.max(this.maxTagged.get(g) ?? 0, n));
    }
  }

  private requestId(): string {
    return `00000000-0000-4000-8000-${(++this.seq).toString(16).padStart(12, '0')}`;
  }
}

/** seeded is a small deterministic generator (mulberry32) in [0, 1). */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function targetLifecycleState(i: FakeInstance): string {
  if (i.terminated || i.lifecycle.startsWith('Terminating')) return 'Terminated';
  if (i.lifecycle === 'Standby' || i.lifecycle === 'EnteringStandby') return 'Standby';
  if (i.lifecycle === 'Detaching' || i.lifecycle === 'Detached') return 'Detached';
  return 'InService';
}

function list(p: Params, prefix: string): string[] {
  const out: string[] = [];
  for (let n = 1; p.has(`${prefix}${n}`); n++) out.push(p.get(`${prefix}${n}`)!);
  return out;
}

function queryFilters(p: Params, prefix: string, nameKey: string, valuePrefix: string): { name: string; values: string[] }[] {
  const out: { name: string; values: string[] }[] = [];
  for (let n = 1; p.has(`${prefix}${n}.${nameKey}`); n++) out.push({ name: p.get(`${prefix}${n}.${nameKey}`)!, values: list(p, `${prefix}${n}.${valuePrefix}`) });
  return out;
}

function maxParam(p: Params, name: string, min: number, max: number, dflt: number): number {
  if (!p.has(name)) return dflt;
  const v = Number(p.get(name));
  if (!Number.isInteger(v) || v < min || v > max) throw new ApiError(400, name === 'MaxResults' ? 'InvalidParameterValue' : 'ValidationError', `${name} must be between ${min} and ${max}`);
  return v;
}

function groupMatches(g: FakeGroup, name: string, values: string[]): boolean {
  if (name === 'tag-key') return [...g.tags.keys()].some((k) => values.includes(k));
  if (name === 'tag-value') return [...g.tags.values()].some((v) => values.includes(v));
  if (name.startsWith('tag:')) return g.tags.has(name.slice(4)) && values.includes(g.tags.get(name.slice(4))!);
  throw new ApiError(400, 'ValidationError', `unknown filter ${name}`);
}

function tagMatches(id: string, key: string, value: string, name: string, values: string[]): boolean {
  switch (name) {
    case 'key': return values.includes(key);
    case 'value': return values.includes(value);
    case 'resource-id': return values.includes(id);
    case 'resource-type': return values.includes('instance');
    default: throw new ApiError(400, 'InvalidParameterValue', `The filter '${name}' is invalid`);
  }
}

function byId(a: { id: string }, b: { id: string }): number {
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
