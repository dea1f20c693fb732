/**
 * Helpers for the `baton serve` process tests: start a real serve process (JSON logs, port 0)
 * and learn its URL from its `listening` log line, fetch JSON, and parse Prometheus text.
 */
import { BatonProcess, waitFor } from '../harness/cli.js';

/** SERVE_TIMING: short leases so failovers take ~2 s; bounds in the tests stay generous. */
export const SERVE_TIMING = ['--lease-duration', '2s', '--renew-deadline', '1400ms', '--retry-period', '400ms'];

/** ServeProcess is a running `baton serve` and the URL it listens on. */
export interface ServeProcess {
  proc: BatonProcess;
  url: string;
  identity: string;
}

/**
 * startServe spawns `baton serve ARGS` (JSON logs unless ARGS say otherwise; ARGS come last, so
 * they win) and waits until it listens; the URL comes from its `listening` line, in either format.
 */
export async function startServe(args: string[], env: NodeJS.ProcessEnv, started: BatonProcess[]): Promise<ServeProcess> {
  const proc = new BatonProcess(['serve', '--listen', '127.0.0.1:0', '--log-format', 'json', ...args], { env });
  started.push(proc);
  const url = await waitFor(
    'baton serve to listen',
    () => {
      if (proc.done) throw new Error(`baton serve exited early:\n${proc.stderr}`);
      return /serving \\?"[^"\\]*\\?" on (http:\/\/[0-9.:[\]]+)/.exec(proc.stderr)?.[1];
    },
    15_000,
  );
  const identity = (await getJson(`${url}/leader`)).body.identity as string;
  return { proc, url, identity };
}

/** logLines parses the complete JSON log lines so far (with --log-format json every line must be JSON). */
export function logLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .slice(0, stderr.lastIndexOf('\n') + 1)
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON log line: ${l}`);
      }
    });
}

/** getJson fetches `url` and returns the status and parsed body. */
export async function getJson(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(5_000) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Sample is one Prometheus sample. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * parsePrometheus parses the text exposition format (0.0.4) strictly enough to catch mistakes:
 * every non-comment line must be `name{labels} value`, every sample's family must have been
 * declared by a # TYPE line first.
 */
export function parsePrometheus(text: string): { samples: Sample[]; types: Map<string, string> } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* /.test(line)) continue;
    if (line.startsWith('#')) throw new Error(`bad comment line: ${line}`);
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy;
    let pos = 0;
    for (let lm = re.exec(body); lm; lm = re.exec(body)) {
      labels[lm[1]!] = lm[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      pos = re.lastIndex;
    }
    if (pos !== body.length) throw new Error(`bad labels in: ${line}`);
    const raw = m[3]!;
    // Prometheus parses special values case-insensitively (Go's ParseFloat), and prom-client
    // writes an empty event-loop-lag histogram's mean as "Nan".
    const special = raw.toLowerCase();
    const value = special === '+inf' ? Infinity : special === '-inf' ? -Infinity : special === 'nan' ? NaN : Number(raw);
    if (Number.isNaN(value) && special !== 'nan') throw new Error(`bad value in: ${line}`);
    const family = m[1]!.replace(/_(bucket|sum|count|total|created)$/, '');
    if (!types.has(m[1]!) && !types.has(family)) throw new Error(`sample before its # TYPE: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { samples, types };
}

/** metric returns the value of one sample (first match of name + labels), or undefined. */
export function metric(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

/** scrape fetches and parses a server's /metrics. */
export async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) });
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  if (!/^text\/plain; version=0\.0\.4/.test(res.headers.get('content-type') ?? '')) throw new Error(`unexpected content type ${res.headers.get('content-type')}`);
  return parsePrometheus(await res.text()).samples;
}
