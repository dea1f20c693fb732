/**
 * When baton itself runs under systemd's watchdog (a unit with WatchdogSec=, which gives baton
 * NOTIFY_SOCKET and WATCHDOG_USEC), baton answers it: READY=1 once, then WATCHDOG=1 every half
 * WATCHDOG_USEC for as long as its event loop runs. A baton frozen or wedged is then restarted
 * by systemd — and its command, if any, has already been stopped by baton's own watchdog process
 * before the lease could pass (cli/watchdog.ts).
 *
 * Sending needs a unix datagram socket, which Node cannot open (see notify-socket.ts): a python3
 * helper sends each line baton writes to it. Its pid is not baton's, so the unit needs
 * NotifyAccess=all (docs/watchdog.md has a unit). Without python3, baton says so once.
 */
import { spawn } from 'node:child_process';

/** The helper: one datagram per stdin line ("\n" inside a message written as a literal \\n). */
const SENDER = `
import socket, sys
addr = sys.argv[1]
if addr.startswith("@"):
    addr = "\\0" + addr[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
for line in sys.stdin:
    try:
        s.sendto(line.rstrip("\\n").replace("\\\\n", "\\n").encode(), addr)
    except OSError:
        pass
`;

/**
 * systemdWatchdogInterval is how often to send WATCHDOG=1 for `env` (half of WATCHDOG_USEC), or
 * undefined when systemd's watchdog is not watching this process (no NOTIFY_SOCKET, no or a bad
 * WATCHDOG_USEC, or WATCHDOG_PID naming another process).
 */
export function systemdWatchdogInterval(env: NodeJS.ProcessEnv, pid = process.pid): number | undefined {
  if (!env.NOTIFY_SOCKET || !env.WATCHDOG_USEC || !/^[1-9][0-9]{0,15}$/.test(env.WATCHDOG_USEC)) return undefined;
  if (env.WATCHDOG_PID !== undefined && env.WATCHDOG_PID !== String(pid)) return undefined;
  return Math.max(1, Number(env.WATCHDOG_USEC) / 1000 / 2);
}

/**
 * answerSystemdWatchdog starts answering systemd's watchdog if it watches baton (see above);
 * returns the function that stops. `onUnavailable` is told once if python3 cannot be run.
 */
export function answerSystemdWatchdog(onUnavailable: (why: string) => void, env: NodeJS.ProcessEnv = process.env, python = env.BATON_PYTHON || 'python3'): () => void {
  const everyMs = systemdWatchdogInterval(env);
  if (everyMs === undefined) return () => {};
  const helper = spawn(python, ['-I', '-u', '-c', SENDER, env.NOTIFY_SOCKET!], { stdio: ['pipe', 'ignore', 'ignore'] });
  let alive = true;
  helper.on('error', (err) => {
    alive = false;
    onUnavailable(`cannot answer systemd's watchdog: ${python}: ${err.message}`);
  });
  helper.stdin!.on('error', () => {});
  const send = (message: string) => {
    if (alive) helper.stdin!.write(`${message}\n`);
  };
  send('READY=1');
  send('WATCHDOG=1');
  const timer = setInterval(() => send('WATCHDOG=1'), everyMs);
  // It must not keep baton alive by itself.
  timer.unref();
  helper.unref();
  (helper.stdin as unknown as { unref?: () => void }).unref?.();
  return () => {
    clearInterval(timer);
    if (alive) {
      send('STOPPING=1');
      helper.stdin!.end();
    }
    alive = false;
  };
}
