/**
 * One line means one line: what baton prints escapes control characters and shortens
 * over-long values; an SDK's multi-line error keeps its first line instead of running every
 * line together into fragments.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printable } from '../../src/cli/output.js';
import { oneLine } from '../../src/stores/kit/errors.js';

test('printable escapes newlines, tabs and terminal escapes', () => {
  assert.equal(printable('a\nb\tc\r\x1b[31mred\x07'), 'a\\nb\\tc\\r\\x1b[31mred\\x07');
});

test('printable shortens one long value to its head and tail and says how much is left out', () => {
  const path = `/${'d'.repeat(100_000)}/x.db`;
  const out = printable(`no store at ${path} (check --store)`);
  assert.ok(out.length < 250, `shortened: ${out.length}`);
  assert.match(out, /^no store at \/d{69}…\[99906 more characters\]…d{25}\/x\.db \(check --store\)$/);
});

test('printable keeps short values whole and caps the whole line', () => {
  assert.equal(printable('lock "a" is held by b'), 'lock "a" is held by b');
  const many = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
  const out = printable(many);
  assert.ok(out.length <= 600);
  assert.ok(out.endsWith('…'));
});

test('oneLine keeps the first line of an SDK error, not its headers, body and stack', () => {
  const k8s = 'HTTP-Code: 403\nMessage: Unknown API Status Code!\nBody: "{\\"kind\\":\\"Status\\"}"\nHeaders: {"audit-id":"x"}';
  assert.equal(oneLine(k8s), 'HTTP-Code: 403');
  assert.equal(oneLine('connect failed:\n  ECONNREFUSED 127.0.0.1:1\n    at TCPConnectWrap.afterConnect'), 'connect failed: ECONNREFUSED 127.0.0.1:1');
  assert.equal(oneLine('boom\n    at f (x.js:1:1)\n    at g (x.js:2:2)'), 'boom');
  assert.equal(oneLine('x'.repeat(400)).length, 300);
});
