/**
 * A NATS user that may not publish to the bucket: the server refuses, and says so on the
 * connection rather than to the write's reply subject. A renewal (the store's own writer) and
 * a create (a JetStream request) must both fail at once with the server's words, as a
 * configuration error (exit 78) — not as a bare timeout after the call's bound, which is what a
 * renewing leader saw before (issue 29). A real nats-server with two users.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { InvalidConfigError } from '../../../src/core/errors.js';
import { NatsStore } from '../../../src/stores/nats/index.js';
import { NatsServer } from '../../../infra/servers/index.js';
import { acquireWrite, keepWrite } from '../../../src/testing/index.js';

const server = await new NatsServer(`{
  users = [
    { user: admin, password: admin }
    { user: reader, password: reader, permissions: { publish: { deny: ["$KV.baton.>"] } } }
  ]
}`).start();
after(() => server.stop());

const url = (who: string) => `nats://${who}:${who}@127.0.0.1:${server.port}?timeout=3s`;

test('a write the user may not publish fails at once with the server’s words, as a configuration error', async () => {
  const admin = await NatsStore.open({ url: url('admin') });
  const reader = await NatsStore.open({ url: url('reader') });
  try {
    const held = await admin.write('perm-lock', null, acquireWrite('admin'));
    assert.ok(held.ok, 'the admin acquires');
    assert.equal((await reader.read('perm-lock'))?.holder, 'admin', 'the reader may read');

    // A renewal-shaped write on the record the reader sees: the store's own writer.
    const startedMs = performance.now();
    await assert.rejects(reader.write('perm-lock', held.record.revision, keepWrite('admin')), (err: Error) => {
      assert.ok(err instanceof InvalidConfigError, `${err.name}: ${err.message}`);
      assert.match(err.message, /Permissions Violation for Publish to "\$KV\.baton\./);
      return true;
    });
    assert.ok(performance.now() - startedMs < 1500, `refused after ${Math.round(performance.now() - startedMs)} ms, not at the 3 s timeout`);

    // A create: a JetStream request.
    await assert.rejects(reader.write('perm-other', null, acquireWrite('reader')), (err: Error) => {
      assert.ok(err instanceof InvalidConfigError, `${err.name}: ${err.message}`);
      assert.match(err.message, /Permissions Violation/);
      return true;
    });
  } finally {
    await Promise.all([admin.close(), reader.close()]);
  }
});
