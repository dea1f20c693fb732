/**
 * The fenced register: the downstream system a leader acts on, run as its own process by the
 * harness (`node --import tsx chaos/register.ts LOGFILE [HOST]`). It prints `PORT <n>` once
 * listening on HOST (default loopback; --net netns: its own host's address).
 *
 * It is linearizable because it is one single-threaded process that handles each line to
 * completion before the next. A write is accepted only if its fencing token is not older than
 * the newest token accepted so far, which is exactly what a fenced downstream (a database
 * column compared on update, a storage API's generation check) does. An equal token is
 * accepted: a downstream cannot tell two holders of one token apart, so the checker looks for
 * that case in the log instead (it would mean the store reused a term).
 *
 * It keeps one register per key (shard mode writes shard s to key `s<s>`; a write without a key
 * goes to the single register of an ordinary run); each is fenced on its own.
 *
 * Protocol, one line each way:
 *   W <token> <from> [<key>]  →  OK | STALE <newest>
 *   Q                  →  L <from|-> <token> <msSinceLastAccept>   (who the register last heard)
 *   END                →  BYE, after the log is flushed; then the process exits
 */
import { createServer, type Socket } from 'node:net';
import { monoMs } from './clock.js';
import { JsonlWriter, type RegisterEvent } from './events.js';

const logPath = process.argv[2];
if (!logPath) {
  process.stderr.write('usage: register.ts LOGFILE\n');
  process.exit(64);
}
const log = new JsonlWriter<RegisterEvent>(logPath);

type Run = { token: number; from: string; t0: number; t1: number; n: number };
/** Per key: the newest token accepted, and the run of accepted writes being counted (written out when token or writer changes). */
const registers = new Map<string, { newest: number; run?: Run }>();
/** The latest accepted write, whatever its key (what Q answers). */
let last: Run | undefined;

function flushRun(key: string): void {
  const r = registers.get(key);
  if (r?.run) log.write({ ev: 'accepted', ...r.run, ...(key ? { key } : {}) });
  if (r) r.run = undefined;
}

function write(token: number, from: string, key: string): string {
  const t = monoMs();
  let r = registers.get(key);
  if (!r) registers.set(key, (r = { newest: -1 }));
  if (token < r.newest) {
    log.write({ ev: 'rejected', t, token, from, newest: r.newest, ...(key ? { key } : {}) });
    return `STALE ${r.newest}`;
  }
  r.newest = token;
  if (r.run && r.run.token === token && r.run.from === from) {
    r.run.t1 = t;
    r.run.n++;
  } else {
    flushRun(key);
    r.run = { token, from, t0: t, t1: t, n: 1 };
  }
  last = r.run;
  return 'OK';
}

function handle(line: string, socket: Socket): void {
  const [cmd, a, b, key] = line.trim().split(' ');
  if (cmd === 'W' && a !== undefined && b !== undefined && /^\d+$/.test(a)) {
    socket.write(write(Number(a), b, key ?? '') + '\n');
  } else if (cmd === 'Q') {
    socket.write(last ? `L ${last.from} ${last.token} ${Math.round(monoMs() - last.t1)}\n` : 'L - -1 -1\n');
  } else if (cmd === 'END') {
    shutdown(() => socket.end('BYE\n'));
  } else {
    socket.write(`ERR unknown request "${line.slice(0, 40)}"\n`);
  }
}

const sockets = new Set<Socket>();
const server = createServer((socket) => {
  sockets.add(socket);
  socket.setNoDelay(true);
  let buffered = '';
  socket.on('data', (chunk) => {
    buffered += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      handle(buffered.slice(0, nl), socket);
      buffered = buffered.slice(nl + 1);
    }
  });
  socket.on('error', () => socket.destroy());
  socket.on('close', () => sockets.delete(socket));
});

let ended = false;
function shutdown(then?: () => void): void {
  if (ended) return;
  ended = true;
  for (const key of registers.keys()) flushRun(key);
  log.close();
  then?.();
  server.close();
  for (const s of sockets) s.end();
  setTimeout(() => process.exit(0), 200).unref();
}

server.listen(0, process.argv[3] ?? '127.0.0.1', () => {
  process.stdout.write(`PORT ${(server.address() as { port: number }).port}\n`);
});
// The harness owns this process: when it goes away (stdin closes) or asks us to stop, flush and exit.
process.stdin.on('end', () => shutdown());
process.stdin.resume();
process.on('SIGTERM', () => shutdown());
process.on('SIGINT', () => shutdown());
