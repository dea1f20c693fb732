/**
 * NotifySocket: the datagram socket behind the NOTIFY_SOCKET that `baton run --progress-timeout`
 * gives its command, so programs written for systemd's watchdog (sd_notify "WATCHDOG=1") work
 * unchanged under baton.
 *
 * Why a python3 helper: sd_notify sends AF_UNIX SOCK_DGRAM datagrams, and Node (20, 22, 24) can
 * neither bind nor receive on a unix datagram socket — `dgram` is UDP only, `net` is stream only
 * (a stream listener refuses a datagram sender with EPROTOTYPE). The packages that add it are
 * native addons (a compiler at install time, a build per Node line), which baton does not
 * require. python3's standard library can, so a few lines of it bind the socket and pass each
 * datagram to baton as one JSON line on a pipe. It exits, and removes the socket, when that
 * pipe's other end (baton) goes away, even after a SIGKILL of baton. Without python3, the
 * command gets only BATON_HEARTBEAT_FILE (heartbeat-file.ts) and baton says so once.
 *
 * The socket lives in a private directory (mode 0700, made by the caller), so only processes of
 * the same user can send to it (systemd's NotifyAccess=all, limited by the file mode).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

/** The helper: bind, say "ready", relay datagrams as JSON strings until stdin closes. */
const HELPER = `
import json, os, select, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
out = sys.stdout
out.write("ready\\n"); out.flush()
try:
    while True:
        ready, _, _ = select.select([s, sys.stdin], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
            break
        if s in ready:
            data = s.recv(65536)
            out.write(json.dumps(data.decode("utf-8", "replace")) + "\\n"); out.flush()
except (BrokenPipeError, KeyboardInterrupt):
    pass
finally:
    try:
        os.unlink(path)
    except OSError:
        pass
`;

/**
 * NotifyMessage is one datagram, split into its `KEY=VALUE` lines as sd_notify(3) sends them.
 */
export type NotifyMessage = ReadonlyMap<string, string>;

/** parseNotify splits a datagram into its assignments; lines without '=' are ignored. */
export function parseNotify(text: string): NotifyMessage {
  const m = new Map<string, string>();
  for (const line of text.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) m.set(line.slice(0, eq), line.slice(eq + 1));
  }
  return m;
}

/** NotifySocket is a bound notify socket; `close` removes it. */
export class NotifySocket {
  private constructor(
    /** The socket's path: the value of NOTIFY_SOCKET. */
    readonly path: string,
    private readonly helper: ChildProcess,
  ) {}

  /**
   * open binds a notify socket at `path` (in a private directory) and calls `onMessage` for each
   * datagram. Resolves with undefined, not an error, when python3 cannot be run or cannot bind:
   * the caller then runs without NOTIFY_SOCKET. `python` overrides the interpreter (tests).
   */
  static open(path: string, onMessage: (m: NotifyMessage) => void, python = 'python3'): Promise<NotifySocket | undefined> {
    return new Promise((resolve) => {
      const helper = spawn(python, ['-I', '-u', '-c', HELPER, path], { stdio: ['pipe', 'pipe', 'ignore'] });
      let settled = false;
      const settle = (v: NotifySocket | undefined) => {
        if (settled) return;
        settled = true;
        resolve(v);
      };
      helper.on('error', () => settle(undefined));
      helper.on('exit', () => settle(undefined));
      helper.stdin!.on('error', () => {});
      const lines = createInterface({ input: helper.stdout! });
      lines.on('line', (line) => {
        if (!settled) return settle(line === 'ready' ? new NotifySocket(path, helper) : undefined);
        try {
          const text: unknown = JSON.parse(line);
          if (typeof text === 'string') onMessage(parseNotify(text));
        } catch {
          // not a line of ours: ignore
        }
      });
    });
  }

  /** close ends the helper, which removes the socket. */
  close(): void {
    this.helper.stdin?.end();
  }
}
