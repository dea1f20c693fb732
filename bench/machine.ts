/**
 * machineRecord describes where a run happened: CPU, cores, memory, Node, the peers' package
 * versions and the load average (other work on the host skews timings; it is recorded, not
 * hidden).
 */
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type as osType } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import type { Machine } from './results.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Read from node_modules directly: some packages (redlock) do not export their package.json. */
function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return 'not installed';
  }
}

function cpuModel(): string {
  const fromOs = cpus()[0]?.model?.trim();
  if (fromOs) return fromOs;
  try {
    return /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** machineRecord is taken at the start of a run; servers and the end load are filled in later. */
export function machineRecord(mode: 'full' | 'quick'): Machine {
  return {
    cpuModel: cpuModel(),
    cores: cpus().length,
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    os: `${osType()} ${release()}`,
    node: process.version,
    servers: {},
    peers: {
      ioredis: packageVersion('ioredis'),
      redlock: packageVersion('redlock'),
      'redis-semaphore': packageVersion('redis-semaphore'),
      etcd3: packageVersion('etcd3'),
      pg: packageVersion('pg'),
      'better-sqlite3': packageVersion('better-sqlite3'),
    },
    loadAverageAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
    mode,
    startedAt: new Date().toISOString(),
    notes: [],
  };
}

/**
 * fsyncMs times 4 KiB write + fdatasync in `dir` (where the servers keep their data): every
 * durable write a store makes (Redis appendfsync always, SQLite synchronous=FULL, etcd's WAL)
 * waits for one, so it is the floor under every write that is not a plain keepalive or read.
 */
export function fsyncMs(dir: string, samples = 50): number {
  const path = join(dir, 'fsync-probe');
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(4096, 1);
  const times: number[] = [];
  try {
    for (let i = 0; i < samples; i++) {
      const t0 = performance.now();
      writeSync(fd, block);
      fdatasyncSync(fd);
      times.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)]! * 1000) / 1000;
}
