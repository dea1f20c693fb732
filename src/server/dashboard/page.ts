/**
 * The dashboard page: one HTML document with its style and script inline (guarded by a
 * per-response CSP nonce), so the server needs no build step and no files on disk.
 */
import { DASHBOARD_CSS } from './style.js';
import { DASHBOARD_JS } from './client.js';

/** dashboardPage renders the page for `lock`; `nonce` must match the response's CSP header. */
export function dashboardPage(nonce: string, lock: string): string {
  const l = escapeHtml(lock);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>baton · ${l}</title>
<style nonce="${nonce}">${DASHBOARD_CSS}</style>
</head>
<body>
<header>
  <h1>baton</h1><span class="lock">${l}</span><span class="spacer"></span>
  <span id="conn" class="pill">connecting…</span>
</header>
<main>
  <div id="banner" class="banner" role="alert"></div>
  <section class="card">
    <h2>Current leader</h2>
    <div class="hero">
      <div><div class="k">Holder</div><div class="v big"><span id="leader" data-testid="leader">…</span><span id="role" class="role standby">standby</span></div></div>
      <div><div class="k">Term</div><div class="v big" id="term">–</div></div>
      <div><div class="k">Host</div><div class="v" id="host">–</div></div>
      <div><div class="k">Leading since</div><div class="v" id="since">–</div></div>
      <div><div class="k">Expires in</div><div class="v" id="expires">–</div></div>
    </div>
    <div class="meta">This instance: <span id="identity">…</span> · store: <span id="store">…</span></div>
  </section>
  <section class="card">
    <h2>Locks</h2>
    <table>
      <thead><tr><th>Lock</th><th>Holder</th><th>Term</th><th>Host</th><th>Expires in</th><th>Changes</th></tr></thead>
      <tbody id="locks"></tbody>
    </table>
  </section>
  <section class="card" id="candidates-card" hidden>
    <h2>Candidates</h2>
    <table>
      <thead><tr><th>Identity</th><th>Host</th><th>Version</th><th>Priority</th><th>Labels</th><th>Started</th><th>Last seen (its clock)</th></tr></thead>
      <tbody id="candidates"></tbody>
    </table>
    <div class="meta" id="preferred"></div>
  </section>
  <section class="card" id="shards-card" hidden>
    <h2>Shard groups</h2>
    <div id="shards"></div>
  </section>
  <section class="card">
    <h2>Election timeline</h2>
    <div id="lanes" class="lanes"></div>
    <div id="axis" class="axis"></div>
    <div id="legend" class="legend"></div>
    <ol id="events" class="events" data-testid="timeline"></ol>
  </section>
</main>
<script nonce="${nonce}">${DASHBOARD_JS}</script>
</body>
</html>
`;
}

/** escapeHtml makes text safe inside HTML text and attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
