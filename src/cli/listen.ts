/**
 * `--listen ADDR`, the address of an HTTP listener: `baton serve`'s (always on) and
 * `baton shards`'s (opt-in, for /metrics and /healthz). Checked once, before anything is opened.
 */
import { UsageError } from '../core/errors.js';

/** parseListen reads HOST:PORT, :PORT, PORT or [IPv6]:PORT (default host 127.0.0.1); anything else is a UsageError (exit 64). */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):)?(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new UsageError(`--listen: "${text}" is not an address; use HOST:PORT, e.g. 127.0.0.1:4040, 0.0.0.0:4040 or [::1]:4040`);
  }
  return { host: m[1] ?? (m[2] || '127.0.0.1'), port };
}
