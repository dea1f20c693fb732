/**
 * RedialPacer on a hand-driven monotonic clock: the nats client's reconnect loop calls it once
 * per turn, and dials when it answers -Infinity (or when its own wall-clock test passes).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RedialPacer } from '../../../src/stores/nats/redial.js';

describe('nats RedialPacer', () => {
  it('dials at once the first time, then waits wait + jitter between dials, never a busy loop', () => {
    let now = 1_000;
    const pacer = new RedialPacer(250, 100, () => now, () => 0.5);
    assert.equal(pacer.delay(), -Infinity, 'first turn: dial now');
    // The dial failed at once: the next turns wait, whatever the wall clock says.
    assert.equal(pacer.delay(), 300);
    now += 300;
    assert.equal(pacer.delay(), 300, 'still inside wait + jitter');
    now += 50;
    assert.equal(pacer.delay(), -Infinity, 'wait + jitter passed on the monotonic clock: dial');
    assert.equal(pacer.delay(), 300, 'that answer counted as a dial');
  });

  it('a dial the client made on its own (its reconnecting event) restarts the wait', () => {
    let now = 0;
    const pacer = new RedialPacer(250, 100, () => now, () => 0);
    pacer.dialed();
    now += 349;
    assert.equal(pacer.delay(), 250);
    pacer.dialed();
    now += 349;
    assert.equal(pacer.delay(), 250, 'measured from the newer dial');
    now += 1;
    assert.equal(pacer.delay(), -Infinity);
  });
});
