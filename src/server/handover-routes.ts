/**
 * The sidecar's part in directed handover and the candidate registry (core/handover.ts,
 * core/candidates.ts): `POST /handover?to=ID` (token-guarded like /step-down) and
 * `GET /candidates`. Any candidate's sidecar can ask: the handover is carried by the lock's
 * record, not by the leader's process.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parseDuration } from '../core/duration.js';
import { BatonError, InvalidConfigError, LeaseLostError, StoreUnavailableError, errorMessage } from '../core/errors.js';
import { directedHandoverRefusal } from '../core/handover.js';
import type { LeaderElector } from '../core/elector.js';
import { validateIdentity } from '../core/options.js';
import type { Logger } from './log.js';
import { readCandidatesView } from '../view/candidates-view.js';
import { scrubSecrets } from './redact.js';

type Json = (res: ServerResponse, status: number, body: unknown) => void;

/** How long POST /handover waits for the successor to lead, unless `timeout=` says otherwise. */
export const DEFAULT_HANDOVER_TIMEOUT_MS = 30_000;

/**
 * handoverRoute answers `POST /handover?to=ID[&from=ID][&timeout=D]` (after the token check):
 * 200 once ID leads (outcome `handed`, or `already`), 409 when nothing changed or the lease went
 * elsewhere (`not-candidate` with `why`, `not-held`, `moved`), 504 if ID does not lead within the
 * timeout, 400 for a missing or invalid parameter, 501 on a queue store (etcd, zk), 503 when the
 * store cannot be reached.
 */
export function handoverRoute(elector: LeaderElector, json: Json, log: Logger) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const q = new URL(req.url ?? '/', 'http://localhost').searchParams;
    const lock = elector.lock;
    let to: string;
    let from: string | undefined;
    let timeoutMs = DEFAULT_HANDOVER_TIMEOUT_MS;
    try {
      const raw = q.get('to');
      if (raw === null || raw === '') throw new InvalidConfigError('missing ?to=ID: the candidate that should lead next (GET /candidates lists them)');
      to = param(raw, 'to');
      from = q.get('from') !== null ? param(q.get('from')!, 'from') : undefined;
      if (q.get('timeout') !== null) timeoutMs = parseDuration(q.get('timeout')!, 'timeout');
      if (timeoutMs < 100 || timeoutMs > 3_600_000) throw new InvalidConfigError(`timeout: "${q.get('timeout')}" must be 100ms to 1h`);
    } catch (err) {
      return json(res, 400, { outcome: 'bad-request', lock, error: errorMessage(err) });
    }
    const refusal = directedHandoverRefusal(elector.store);
    if (refusal) return json(res, 501, { outcome: 'unsupported', lock, error: `${refusal} (POST /step-down hands over to the next in line)` });
    log('info', 'handover', `handover of "${lock}" to ${to} requested`, { lock, to, ...(from !== undefined ? { from } : {}) });
    try {
      const r = await elector.handover(to, { from, timeoutMs, ackTimeoutMs: Math.min(elector.timing.leaseDurationMs, timeoutMs / 2) });
      const at = { lock, to, holder: r.record?.holder ?? null, term: r.record?.term ?? null };
      if (r.outcome === 'handed' || r.outcome === 'already') return json(res, 200, { outcome: r.outcome, ...at });
      if (r.outcome === 'not-candidate') return json(res, 409, { outcome: r.outcome, why: r.why, ...at });
      return json(res, 409, { outcome: r.outcome, ...at });
    } catch (err) {
      if (err instanceof LeaseLostError) return json(res, 504, { outcome: 'timeout', lock, to, error: err.message });
      if (err instanceof StoreUnavailableError) return json(res, 503, { outcome: 'unavailable', lock, to, error: scrubSecrets(err.message) });
      throw err;
    }
  };
}

/** candidatesRoute answers `GET /candidates`: the lock's registry (server/candidates-view.ts), read from the store's ledger. */
export function candidatesRoute(elector: LeaderElector, json: Json) {
  return async (_req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const view = await readCandidatesView(elector.store, elector.lock, elector.leader()?.holder ?? null);
    if (!view) {
      return json(res, 200, { lock: elector.lock, registry: false, why: `the ${elector.store.kind} store has no ledger: no candidate registry`, candidates: [] });
    }
    return json(res, 200, { registry: true, ...view });
  };
}

function param(value: string, name: string): string {
  try {
    return validateIdentity(value);
  } catch (err) {
    throw err instanceof BatonError ? new InvalidConfigError(err.message.replace(/^identity:/, `${name}:`)) : err;
  }
}
