/**
 * InstanceMetadata reads EC2 instance metadata with IMDSv2 only: PUT /latest/api/token with a
 * TTL header for a session token, then GETs that carry it. IMDSv1 (token-less GETs) is never
 * used — modern AMIs and launch templates turn it off. Plain `fetch`, no SDK.
 *
 * The endpoint is AWS_EC2_METADATA_SERVICE_ENDPOINT (the variable the AWS SDKs read), else
 * http://169.254.169.254. In containers the token PUT needs an IMDS hop limit of 2.
 */
import { AwsUnavailableError } from './errors.js';

/** DEFAULT_METADATA_ENDPOINT is the link-local address EC2 serves metadata on. */
export const DEFAULT_METADATA_ENDPOINT = 'http://169.254.169.254';

/** InstanceMetadataOptions tune the client; every field has a default. */
export interface InstanceMetadataOptions {
  /** Base URL; default AWS_EC2_METADATA_SERVICE_ENDPOINT, else DEFAULT_METADATA_ENDPOINT. */
  endpoint?: string;
  /** Per-request timeout; default 2 s. */
  timeoutMs?: number;
  /** Token lifetime asked for; default 6 h (the maximum). */
  tokenTtlSeconds?: number;
  env?: NodeJS.ProcessEnv;
}

/** InstanceMetadata is a small IMDSv2 client; one per process is enough. */
export class InstanceMetadata {
  readonly endpoint: string;
  private readonly timeoutMs: number;
  private readonly ttlSeconds: number;
  private token?: { value: string; expiresAtMs: number };

  constructor(options: InstanceMetadataOptions = {}) {
    const env = options.env ?? process.env;
    this.endpoint = (options.endpoint ?? (env.AWS_EC2_METADATA_SERVICE_ENDPOINT?.trim() || DEFAULT_METADATA_ENDPOINT)).replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 2_000;
    this.ttlSeconds = options.tokenTtlSeconds ?? 21_600;
  }

  /**
   * get returns the text at `/latest/meta-data/<path>`, or null when the path does not exist
   * (404). Throws AwsUnavailableError when the service cannot be reached or misbehaves.
   */
  async get(path: string): Promise<string | null> {
    for (let attempt = 0; ; attempt++) {
      const token = await this.sessionToken(attempt > 0);
      const res = await this.request('GET', `/latest/meta-data/${path}`, { 'x-aws-ec2-metadata-token': token });
      if (res.status === 200) return res.text;
      if (res.status === 404) return null;
      // 401: the token expired or the service restarted; get a fresh one once.
      if (res.status === 401 && attempt === 0) continue;
      throw new AwsUnavailableError(`aws: instance metadata ${path}: HTTP ${res.status}`);
    }
  }

  /** require is get() that treats a missing path as unavailable metadata. */
  async require(path: string): Promise<string> {
    const value = await this.get(path);
    if (value === null || value.trim() === '') throw new AwsUnavailableError(`aws: instance metadata has no ${path} (is this an EC2 instance?)`);
    return value.trim();
  }

  /** instanceId is this instance's id. */
  instanceId(): Promise<string> {
    return this.require('instance-id');
  }

  /** region is this instance's region. */
  region(): Promise<string> {
    return this.require('placement/region');
  }

  private async sessionToken(fresh: boolean): Promise<string> {
    // Renew a minute early so a token never expires between check and use.
    if (!fresh && this.token && this.token.expiresAtMs - 60_000 > performance.now()) return this.token.value;
    const res = await this.request('PUT', '/latest/api/token', { 'x-aws-ec2-metadata-token-ttl-seconds': String(this.ttlSeconds) });
    if (res.status !== 200 || res.text === '') {
      throw new AwsUnavailableError(`aws: instance metadata refused a session token (HTTP ${res.status}; IMDSv2 with hop limit ≥ 2 is needed in containers)`);
    }
    this.token = { value: res.text, expiresAtMs: performance.now() + this.ttlSeconds * 1000 };
    return res.text;
  }

  private async request(method: string, path: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
    try {
      const res = await fetch(`${this.endpoint}${path}`, { method, headers, signal: AbortSignal.timeout(this.timeoutMs) });
      return { status: res.status, text: await res.text() };
    } catch (err) {
      const c = (err as { cause?: { code?: string; message?: string } }).cause;
      const cause = c?.code ?? c?.message ?? (err as Error).name;
      throw new AwsUnavailableError(`aws: instance metadata at ${this.endpoint} cannot be reached (${cause})`, { cause: err });
    }
  }
}

/**
 * resolveRegion is AWS_REGION / AWS_DEFAULT_REGION when set, else this instance's region from
 * instance metadata.
 */
export async function resolveRegion(imds: InstanceMetadata, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const region = env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim();
  if (region) return region;
  try {
    return await imds.region();
  } catch (err) {
    // Off EC2 the metadata service is simply absent: say what would fix it.
    throw new AwsUnavailableError(`${(err as Error).message}; set AWS_REGION when not on EC2`, { cause: err });
  }
}
