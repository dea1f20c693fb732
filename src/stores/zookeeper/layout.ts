/**
 * Where baton's znodes live under the root, how latch node names are made and ordered, and the
 * JSON baton keeps beside each of its latch nodes.
 *
 *   <root>/<lock>/_c_<uuid>-latch-<seq>        a candidate: ephemeral sequential, data = holder id
 *                                              (exactly what Curator's LeaderLatch writes and reads)
 *   <root>/_baton/records/<lock>/<uuid>        baton's record of that candidate: ephemeral, same
 *                                              session, created in the same multi; the record
 *                                              JSON of kit/record-codec.ts (its holder and term
 *                                              are informational: the latch node's data and
 *                                              czxid are what count)
 *   <root>/_baton/ledger/<key>                 a ledger entry (persistent)
 *   <root>/_baton/present/<lock>/<identity>    a candidate's registry entry: ephemeral, of the
 *                                              handle's base session (presence.ts)
 *   <root>/_baton/asks/<lock>                  touched (data: the front's term) after each write of a
 *                                              front record that asks or accepts a handover, so the
 *                                              candidate right behind, watching it, hears of it
 *                                              (persistent; empty of meaning otherwise)
 *
 * A lock name's `/` is written `%2F`, so every lock is one znode directly under the root (lock
 * names never hold `%` or start with `_`, so neither clashes).
 */
import type { LeaseRecord, LeaseWrite } from '../../core/store.js';
import { decodeRecord, encodeRecord, recordOf } from '../kit/record-codec.js';

/** ZkLayout maps locks and ledger keys to znode paths under one root. */
export class ZkLayout {
  constructor(readonly root: string) {}
  lockDir(lock: string): string {
    return `${this.root}/${lock.replace(/\//g, '%2F')}`;
  }
  lockOfDir(name: string): string | undefined {
    return name.startsWith('_') || name === 'zookeeper' ? undefined : name.replace(/%2F/g, '/');
  }
  recordDir(lock: string): string {
    return `${this.root}/_baton/records/${lock.replace(/\//g, '%2F')}`;
  }
  recordPath(lock: string, uuid: string): string {
    return `${this.recordDir(lock)}/${uuid}`;
  }
  askPath(lock: string): string {
    return `${this.root}/_baton/asks/${lock.replace(/\//g, '%2F')}`;
  }
  presenceDir(lock: string): string {
    return `${this.root}/_baton/present/${lock.replace(/\//g, '%2F')}`;
  }
  get ledgerDir(): string {
    return `${this.root}/_baton/ledger`;
  }
  ledgerPath(key: string): string {
    return `${this.ledgerDir}/${encodeURIComponent(key)}`;
  }
}

/** Participant is one sequential child of a lock's znode, in the queue's order. */
export interface Participant {
  readonly name: string;
  readonly seq: number;
  /** The `_c_<uuid>` protection id (Curator's, and baton's), when the name has one. */
  readonly uuid?: string;
}

/**
 * SEQUENCED matches the candidate names baton orders by the sequence ZooKeeper appended:
 * Curator LeaderLatch `…latch-<seq>` (baton's own), Curator LeaderSelector/InterProcessMutex
 * `…-lock-<seq>`, kazoo Election/Lock `…__lock__<seq>`.
 */
const SEQUENCED = /(?:latch-|-lock-|__lock__)(\d{10})$/;
const PROTECTED = /^_c_([0-9a-f-]{36})-/;

/** participants orders a lock's children: lowest sequence first; other children are not candidates. */
export function participants(children: readonly string[]): Participant[] {
  const out: Participant[] = [];
  for (const name of children) {
    const m = SEQUENCED.exec(name);
    if (!m) continue;
    out.push({ name, seq: Number(m[1]), uuid: PROTECTED.exec(name)?.[1] });
  }
  return out.sort((a, b) => a.seq - b.seq);
}

/** latchPrefix is the name baton asks ZooKeeper to append a sequence to, as Curator's protected LeaderLatch does. */
export function latchPrefix(uuid: string): string {
  return `_c_${uuid}-latch-`;
}

/** revisionOf is `<czxid of the latch node>:<version of baton's record>` ('-' when the entry has no record). */
export function revisionOf(czxid: number, recordVersion: number | undefined): string {
  return `${czxid}:${recordVersion ?? '-'}`;
}

/** parseRevision reads a revision of ours, or undefined. */
export function parseRevision(revision: string): { czxid: number; version: number } | undefined {
  const m = /^(\d+):(\d+)$/.exec(revision);
  return m ? { czxid: Number(m[1]), version: Number(m[2]) } : undefined;
}

/** encodeWrite is the record znode's data for a write. */
export function encodeWrite(next: LeaseWrite, term = 0): Buffer {
  return Buffer.from(encodeRecord(next, term));
}

/** writtenRecord is the record a successful write of `next` on the entry `czxid` produced. */
export function writtenRecord(lock: string, next: LeaseWrite, czxid: number, recordVersion: number): LeaseRecord {
  return recordOf(lock, next, czxid, revisionOf(czxid, recordVersion));
}

/**
 * toRecord builds the lock's record from the front latch node (holder id and czxid) and baton's
 * record beside it, if any. A foreign participant (Curator, kazoo) has none: its lease fields are
 * zero, and its revision (`<czxid>:-`) matches no write, so baton never rewrites it.
 */
export function toRecord(lock: string, holder: string, czxid: number, record: { data: Buffer; version: number } | undefined): LeaseRecord {
  const fields = record ? decodeRecord(lock, record.data.toString('utf8'), '') : undefined;
  return Object.freeze({
    lock,
    holder,
    term: czxid,
    leaseDurationMs: fields?.leaseDurationMs ?? 0,
    acquiredAt: fields?.acquiredAt ?? 0,
    renewedAt: fields?.renewedAt ?? 0,
    transitions: fields?.transitions ?? 0,
    stepDownRequested: fields?.stepDownRequested ?? false,
    metadata: fields?.metadata ?? {},
    revision: revisionOf(czxid, record?.version),
  });
}
