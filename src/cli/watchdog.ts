/**
 * The watchdog: a small process between `baton` and the command it runs while leading.
 *
 * Why a separate process: the elector's deadline lives in baton's event loop, which a SIGSTOP,
 * a long stall or a SIGKILL can freeze or end. The watchdog holds the deadline on its own, as
 * absolute CLOCK_MONOTONIC instants (shared by every process on the host), so the command is
 * stopped on time whatever happens to baton:
 *
 * - at `termAt` the command's process group gets SIGTERM, at `killAt` SIGKILL;
 * - baton pushes both instants forward after each renewal, over the IPC channel;
 * - if baton dies, the IPC channel closes and the group is killed at once;
 * - if the watchdog itself is killed, the command gets SIGKILL from its parent-death signal
 *   (setpriv --pdeathsig) when setpriv is available.
 *
 * argv: termAtNs killAtNs command [args...]
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

type Msg = { type: 'deadline'; termAtNs: string; killAtNs: string } | { type: 'signal'; signal: NodeJS.Signals };

const [termArg, killArg, command, ...args] = process.argv.slice(2);
let termAt = BigInt(termArg ?? '0');
let killAt = BigInt(killArg ?? '0');
let termTimer: NodeJS.Timeout | undefined;
let killTimer: NodeJS.Timeout | undefined;
let exited = false;
/** Set once the deadline (not the command itself) ended the run: reported with the exit. */
let stoppedAtDeadline = false;

// baton decides when the command stops; signals meant for the command arrive over IPC.
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(sig, () => {});

const env = { ...process.env };
delete env.NODE_CHANNEL_FD;
delete env.NODE_CHANNEL_SERIALIZATION_MODE;
// `run --progress-timeout`: WATCHDOG_PID must be the command's own pid (sd_watchdog_enabled(3)
// checks it), known only once it runs: a shell sets it to its own pid, then execs the command.
const setWatchdogPid = env.BATON_SET_WATCHDOG_PID === '1';
delete env.BATON_SET_WATCHDOG_PID;
const PID_WRAPPER = ['/bin/sh', '-c', 'WATCHDOG_PID=$$; export WATCHDOG_PID; exec "$@"', 'baton'];

// baton gone means nobody renews the lease any more. Listen before anything else, and check
// once more after the command has started: a parent that died while this process was still
// starting would otherwise go unnoticed until the deadline.
let onParentGone = (): void => process.exit(1);
process.on('disconnect', () => onParentGone());
if (!process.connected) process.exit(1);

const send = (m: object, then?: () => void) => {
  if (process.connected) process.send?.(m, () => then?.());
  else then?.();
};

/**
 * findExecutable resolves a command as the shell would (PATH lookup unless it has a slash):
 * 'found', or why not — 'not-executable' (a file or directory is there, but cannot be run:
 * exit 126 as a shell says) or 'not-found' (127).
 */
function findExecutable(cmd: string): 'found' | 'not-executable' | 'not-found' {
  const candidates = cmd.includes('/') ? [cmd] : (env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, cmd));
  let seen = false;
  for (const p of candidates) {
    try {
      const isFile = statSync(p).isFile();
      seen = true;
      accessSync(p, constants.X_OK);
      if (isFile) return 'found';
    } catch {
      // not here, or not executable: try the next PATH entry, as a shell does
    }
  }
  return seen ? 'not-executable' : 'not-found';
}

const found = command ? findExecutable(command) : 'not-found';
if (!command || found !== 'found') {
  // Say it here: through setpriv the message would be setpriv's.
  const why = found === 'not-executable' ? 'is not executable' : 'was not found';
  send({ type: 'error', message: `${JSON.stringify(command ?? '')} ${why}`, exitCode: found === 'not-executable' ? 126 : 127 }, () => process.exit(found === 'not-executable' ? 126 : 127));
} else {
  const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p));
  const target = setWatchdogPid ? [...PID_WRAPPER, command, ...args] : [command, ...args];
  const argv = setpriv ? [setpriv, '--pdeathsig', 'KILL', '--', ...target] : target;
  const child = spawn(argv[0]!, argv.slice(1), { stdio: 'inherit', env, detached: true });

  const killGroup = (signal: NodeJS.Signals): void => {
    if (!child.pid) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      try {
        if (!exited) child.kill(signal);
      } catch {
        // already gone
      }
    }
  };
  const clearTimers = () => {
    if (termTimer) clearTimeout(termTimer);
    if (killTimer) clearTimeout(killTimer);
  };
  const msUntil = (at: bigint) => Math.max(0, Number(at - process.hrtime.bigint()) / 1e6);
  const arm = () => {
    clearTimers();
    if (exited) return;
    termTimer = setTimeout(() => {
      stoppedAtDeadline = true;
      killGroup('SIGTERM');
      // A stopped (SIGSTOP) command cannot act on SIGTERM until it runs again; as systemd does,
      // continue it so it can shut down cleanly. SIGKILL follows on schedule either way.
      killGroup('SIGCONT');
    }, msUntil(termAt));
    killTimer = setTimeout(() => ((stoppedAtDeadline = true), killGroup('SIGKILL')), msUntil(killAt));
  };

  child.on('error', (err) => {
    exited = true;
    const notExecutable = (err as NodeJS.ErrnoException).code === 'EACCES';
    send({ type: 'error', message: err.message, code: (err as NodeJS.ErrnoException).code, exitCode: notExecutable ? 126 : 127 }, () => process.exit(notExecutable ? 126 : 127));
  });
  child.on('spawn', () => send({ type: 'started', pid: child.pid }));
  child.on('exit', (code, signal) => {
    exited = true;
    clearTimers();
    send({ type: 'exit', code, signal, stoppedAtDeadline });
    // Leave nothing behind in the group, then go.
    killGroup('SIGKILL');
    setTimeout(() => process.exit(0), 20);
  });
  process.on('message', (m: Msg) => {
    if (m.type === 'deadline') {
      termAt = BigInt(m.termAtNs);
      killAt = BigInt(m.killAtNs);
      arm();
    } else if (m.type === 'signal') {
      killGroup(m.signal);
    }
  });
  onParentGone = () => {
    killGroup('SIGKILL');
    setTimeout(() => process.exit(1), 20);
  };
  child.on('spawn', () => {
    if (!process.connected) onParentGone();
  });
  arm();
}
