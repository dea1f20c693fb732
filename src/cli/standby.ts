/**
 * What a campaigning command tells its operator while it is not the leader: one line when it
 * starts waiting ("waiting for L: held by X (term N) since …") and one per change of leader,
 * so a standby that seems to hang says why. Store errors are told once each until the store
 * answers again; an error that retrying cannot fix (a configuration error found only once the
 * store was reached, e.g. a table that is not baton's) ends the command through `onFatal`.
 */
import type { LeaderElector, LeaderEvent } from '../core/elector.js';
import { InvalidConfigError } from '../core/errors.js';
import { info, warn } from './common.js';

/** StandbyReportOptions: whether to tell about waiting, and what to do with a fatal store error. */
export interface StandbyReportOptions {
  /** Tell when waiting and when the leader changes (default true). */
  waiting?: boolean;
  /** Called once with an error retrying cannot fix (InvalidConfigError). */
  onFatal?: (err: InvalidConfigError) => void;
}

/** reportStandby attaches the reports to `elector`; returns a function that detaches them. */
export function reportStandby(elector: LeaderElector, options: StandbyReportOptions = {}): () => void {
  const lock = elector.lock;
  let told = false;
  let lastError: string | undefined;
  let fatal = false;
  const onLeader = (e: LeaderEvent) => {
    lastError = undefined;
    if (e.isSelf || e.holder === null || options.waiting === false) return;
    const since = e.record?.acquiredAt ? new Date(e.record.acquiredAt).toISOString() : 'an unknown time';
    info(`waiting for "${lock}": ${told ? 'now ' : ''}held by ${e.holder} (term ${e.term}) since ${since}`, 'waiting', {
      lock,
      holder: e.holder,
      term: e.term,
      since,
    });
    told = true;
  };
  const onStoreError = (err: Error) => {
    if (err instanceof InvalidConfigError) {
      if (!fatal) options.onFatal?.(err);
      fatal = true;
      return;
    }
    if (err.message === lastError) return;
    lastError = err.message;
    warn(`store error: ${err.message}`, 'store-error', { lock });
  };
  const onRenewed = () => (lastError = undefined);
  elector.on('leader', onLeader);
  elector.on('storeError', onStoreError);
  elector.on('renewed', onRenewed);
  return () => {
    elector.off('leader', onLeader);
    elector.off('storeError', onStoreError);
    elector.off('renewed', onRenewed);
  };
}
