/**
 * The dashboard in real headless Chromium (Debian's /usr/bin/chromium, driven by
 * playwright-core; no browser is downloaded): it shows the current leader and every lock, and
 * after the leader process is SIGKILLed it shows the new leader and the failover on the
 * timeline without a reload. Leaves a screenshot in test-artifacts/dashboard.png.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { BatonProcess, ROOT, TempDir, cleanEnv, waitFor } from '../harness/cli.js';
import { SERVE_TIMING, getJson, startServe } from './serve-harness.js';

const dir = new TempDir();
const started: BatonProcess[] = [];
let browser: Browser | undefined;
after(async () => {
  await browser?.close();
  await Promise.all(started.map((b) => b.kill()));
  dir.remove();
});

const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

test('the dashboard follows a failover live, in headless Chromium', async () => {
  const env = cleanEnv(dir.path);
  const store = dir.sqlite('dash.db');
  // a and b are registered candidates (issue 27): the page lists them and who would be preferred.
  const a = await startServe(['--store', store, '--lock', 'orders-worker', '--identity', 'node-a', '--app-version', '1.0.0', ...SERVE_TIMING], env, started);
  await waitFor('a to lead', async () => (await getJson(`${a.url}/leader`)).body.isSelf);
  const b = await startServe(['--store', store, '--lock', 'orders-worker', '--identity', 'node-b', '--app-version', '1.1.0', ...SERVE_TIMING], env, started);
  // Another lock in the same store, so the table lists more than the served one.
  const other = await startServe(['--store', store, '--lock', 'nightly-report', '--identity', 'node-c', ...SERVE_TIMING], env, started);
  await waitFor('b to see a', async () => (await getJson(`${b.url}/leader`)).body.holder === 'node-a');
  await waitFor('the other lock held', async () => (await getJson(`${other.url}/leader`)).body.isSelf);

  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems: string[] = [];
  page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
  page.on('pageerror', (e) => problems.push(e.message));
  await page.goto(`${b.url}/`);

  const leader = page.locator('#leader');
  await leader.filter({ hasText: 'node-a' }).waitFor({ timeout: 10_000 });
  assert.equal(await page.locator('#conn').textContent(), 'live', 'connected through server-sent events');
  await page.locator('#locks tr[data-lock="nightly-report"]').waitFor({ timeout: 10_000 });
  assert.match((await page.locator('#locks tr[data-lock="nightly-report"]').textContent()) ?? '', /node-c/);
  assert.match((await page.locator('#locks tr[data-lock="orders-worker"]').textContent()) ?? '', /node-a/);
  const expiresBefore = await page.locator('#expires').textContent();
  assert.match(expiresBefore ?? '', /^\d+(\.\d)?s$|^\d+ms$/, `a ticking expiry, got ${expiresBefore}`);
  const termBefore = Number(await leader.getAttribute('data-term'));
  await page.locator('#candidates tr[data-candidate="node-b"]').waitFor({ timeout: 10_000 });
  assert.match((await page.locator('#candidates tr[data-candidate="node-a"]').textContent()) ?? '', /★ node-a.*1\.0\.0/);
  assert.match((await page.locator('#preferred').textContent()) ?? '', /newest node-b/);

  // Kill the leader; the page must change on its own.
  const navigations: string[] = [];
  page.on('framenavigated', (f) => f === page.mainFrame() && navigations.push(f.url()));
  a.proc.signal('SIGKILL');
  await leader.filter({ hasText: 'node-b' }).waitFor({ timeout: 15_000 });
  await page.locator('#events li[data-kind="failover"]').first().waitFor({ timeout: 10_000 });
  const failoverText = (await page.locator('#events li[data-kind="failover"]').first().textContent()) ?? '';
  assert.match(failoverText, /node-b took over orders-worker from node-a/);
  assert.ok(Number(await leader.getAttribute('data-term')) > termBefore, 'the term on the page grew');
  assert.equal(await page.locator('#role').textContent(), 'this instance');
  assert.equal(await page.locator('.lane[data-lock="orders-worker"] .mark.failover').count(), 1, 'the failover is marked on the lane');
  assert.deepEqual(navigations, [], 'no reload');
  assert.deepEqual(problems, [], `no console errors (e.g. CSP violations): ${problems.join(" | ")}`);

  await page.waitForTimeout(1200); // let a countdown tick and the lane grow a little
  mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
  await page.screenshot({ path: join(ROOT, 'test-artifacts', 'dashboard.png'), fullPage: true });
  await page.close();
});
