/**
 * HostClock: a monotonic clock shared by every process on one host, with the id of the boot it
 * belongs to. Task locks (task-lock.ts) use it to remember, across short-lived processes, when
 * this host first saw a lock's hold — without ever comparing clocks of different hosts.
 *
 * On Linux, `process.hrtime` reads CLOCK_MONOTONIC, which every process of one boot shares,
 * and /proc/sys/kernel/random/boot_id names the boot. Elsewhere the boot id is unique to the
 * process, so first sightings are only remembered within one process.
 */
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** HostClock is a host-wide monotonic clock and the id of its epoch (the boot). */
export interface HostClock {
  /** Same value for every process that shares this clock's epoch; different after a reboot. */
  readonly bootId: string;
  /** Milliseconds on the host-wide monotonic clock. */
  monotonicMs(): number;
}

function readBootId(): string {
  try {
    const id = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    if (/^[0-9a-f-]{16,64}$/i.test(id)) return `boot:${id}`;
  } catch {
    // not Linux, or /proc is not mounted
  }
  return `process:${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** hostClock is the real host clock. */
export const hostClock: HostClock = Object.freeze({
  bootId: readBootId(),
  monotonicMs: () => Number(process.hrtime.bigint()) / 1e6,
});
