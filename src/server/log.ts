/**
 * Logs for the sidecar: one line per state change on stderr, human-readable by default or JSON
 * lines (`--log-format json`) for log shippers. Nothing logged carries a store password.
 */
import type { LeaderElector } from '../core/elector.js';
import { scrubSecrets } from './redact.js';

/** LogFormat: `human` (default) or `json` (one object per line). */
export type LogFormat = 'human' | 'json';
/** LogLevel of a line: `info` for normal changes, `warn` for trouble baton rides out, `error` for failures. */
export type LogLevel = 'info' | 'warn' | 'error';

/** Logger writes one event: a stable `event` name, a sentence for people, and fields. */
export interface Logger {
  (level: LogLevel, event: string, message: string, fields?: Record<string, unknown>): void;
}

/** createLogger returns a Logger writing `format` lines to `write` (stderr by default). */
export function createLogger(format: LogFormat, write: (line: string) => void = (l) => process.stderr.write(l)): Logger {
  return (level, event, message, fields = {}) => {
    const msg = scrubSecrets(message);
    if (format === 'json') {
      const body = { time: new Date().toISOString(), level, event, msg, ...fields };
      write(`${scrubSecrets(JSON.stringify(body))}\n`);
    } else {
      write(`baton: ${level === 'info' ? '' : `${level}: `}${msg}\n`);
    }
  };
}

/** silentLogger drops everything (the library default). */
export const silentLogger: Logger = () => {};

/**
 * logElectorEvents logs the elector's changes of state: elected, stopped (with the reason),
 * a new leader seen, and store errors — each distinct error once until the store answers again.
 * Returns a function that stops logging.
 */
export function logElectorEvents(elector: LeaderElector, log: Logger): () => void {
  const lock = elector.lock;
  let lastError: string | undefined;
  const recovered = () => {
    if (lastError === undefined) return;
    lastError = undefined;
    log('info', 'store-recovered', `store answering again for "${lock}"`, { lock });
  };
  const onElected = (e: { term: number }) => {
    recovered();
    log('info', 'elected', `elected leader of "${lock}" as ${elector.identity} (term ${e.term})`, { lock, identity: elector.identity, term: e.term });
  };
  const onStopped = (e: { term: number; reason: string; note?: string }) => {
    const level = e.reason === 'stopped' || e.reason === 'resigned' || e.reason === 'step-down-requested' || e.reason === 'handover' ? 'info' : 'warn';
    const note = e.note !== undefined ? ` (${e.note})` : '';
    log(level, 'stopped', `stopped leading "${lock}" (term ${e.term}): ${e.reason}${note}`, { lock, identity: elector.identity, term: e.term, reason: e.reason, ...(e.note !== undefined ? { note: e.note } : {}) });
  };
  const onLeader = (e: { holder: string | null; term: number; isSelf: boolean }) => {
    recovered();
    if (e.isSelf) return; // already told as `elected`
    if (e.holder === null) log('info', 'leader', `"${lock}" is free (last term ${e.term})`, { lock, holder: null, term: e.term });
    else log('info', 'leader', `leader of "${lock}" is ${e.holder} (term ${e.term})`, { lock, holder: e.holder, term: e.term });
  };
  const onRenewed = () => recovered();
  const onStoreError = (err: Error) => {
    const message = scrubSecrets(err.message);
    if (message === lastError) return;
    lastError = message;
    log('warn', 'store-error', `store error for "${lock}": ${message}`, { lock, error: message });
  };
  elector.on('elected', onElected);
  elector.on('stopped', onStopped);
  elector.on('leader', onLeader);
  elector.on('renewed', onRenewed);
  elector.on('storeError', onStoreError);
  return () => {
    elector.off('elected', onElected);
    elector.off('stopped', onStopped);
    elector.off('leader', onLeader);
    elector.off('renewed', onRenewed);
    elector.off('storeError', onStoreError);
  };
}
