/**
 * Lazy loading of the AWS SDK v3 clients. baton lists them as optional peer dependencies: the
 * core and the CLI never load them unless an AWS feature is used, and a missing one is a
 * one-line configuration error (exit 78) naming the package to install.
 *
 * Retries: the SDK's "standard" retry mode, 8 attempts unless AWS_MAX_ATTEMPTS / AWS_RETRY_MODE
 * (or `maxAttempts`) say otherwise. Throttling answers (Throttling, RequestLimitExceeded, …) back
 * off exponentially with full jitter from a 1 s base up to 20 s per wait, under the SDK's retry
 * quota, so a fleet calling at once spreads out instead of hammering the API.
 */
import type { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import type { EC2Client } from '@aws-sdk/client-ec2';
import { InvalidConfigError } from '../core/errors.js';

export type AutoScalingSdk = typeof import('@aws-sdk/client-auto-scaling');
export type Ec2Sdk = typeof import('@aws-sdk/client-ec2');

/** SdkOptions configure the clients baton makes. */
export interface SdkOptions {
  /** AWS region; required (callers resolve it from AWS_REGION or instance metadata). */
  region: string;
  /** Attempts per call, retries included. Default: AWS_MAX_ATTEMPTS, else 8. */
  maxAttempts?: number;
}

/**
 * loadSdkModule imports an SDK package by name; a missing package becomes InvalidConfigError
 * ("install @aws-sdk/…"). Exported for the AWS helpers and their tests.
 */
export async function loadSdkModule<T>(name: string, load: () => Promise<T> = () => import(name) as Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new InvalidConfigError(`aws: install ${name} to use the AWS features (npm install ${name})`);
    }
    throw err;
  }
}

/** loadAutoScaling imports @aws-sdk/client-auto-scaling. */
export function loadAutoScaling(): Promise<AutoScalingSdk> {
  return loadSdkModule('@aws-sdk/client-auto-scaling', () => import('@aws-sdk/client-auto-scaling'));
}

/** loadEc2 imports @aws-sdk/client-ec2. */
export function loadEc2(): Promise<Ec2Sdk> {
  return loadSdkModule('@aws-sdk/client-ec2', () => import('@aws-sdk/client-ec2'));
}

function clientConfig(options: SdkOptions): { region: string; maxAttempts?: number; retryMode?: string } {
  const fromEnv = process.env.AWS_MAX_ATTEMPTS !== undefined;
  return {
    region: options.region,
    ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : fromEnv ? {} : { maxAttempts: 8 }),
    ...(process.env.AWS_RETRY_MODE ? {} : { retryMode: 'standard' }),
  };
}

/** makeAutoScalingClient loads the SDK and builds a client (endpoint from AWS_ENDPOINT_URL_AUTO_SCALING if set). */
export async function makeAutoScalingClient(options: SdkOptions): Promise<{ sdk: AutoScalingSdk; client: AutoScalingClient }> {
  const sdk = await loadAutoScaling();
  return { sdk, client: new sdk.AutoScalingClient(clientConfig(options)) };
}

/** makeEc2Client loads the SDK and builds a client (endpoint from AWS_ENDPOINT_URL_EC2 if set). */
export async function makeEc2Client(options: SdkOptions): Promise<{ sdk: Ec2Sdk; client: EC2Client }> {
  const sdk = await loadEc2();
  return { sdk, client: new sdk.EC2Client(clientConfig(options)) };
}
