/**
 * DASHBOARD_JS is the dashboard's browser script (plain ES2020, no dependencies). It listens to
 * `events` (server-sent events: snapshot, update, timeline), falls back to polling
 * `api/state`, ticks countdowns locally, and draws the election timeline. Every value from the
 * server is inserted as text, never as HTML. Server times are shifted by the offset measured on
 * each message, so the browser's clock need not agree with the server's.
 */
export const DASHBOARD_JS = String.raw`
(function () {
  'use strict';
  var WINDOW_MS = 10 * 60 * 1000, MIN_WINDOW_MS = 20 * 1000, MAX_EVENTS = 40;
  // Distinct colours, handed out in order of first appearance (red is kept for failovers).
  var PALETTE = ['#2563eb', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#db2777', '#65a30d', '#b45309', '#4f46e5', '#0d9488'];
  var colours = {}, nextColour = 0;
  var st = { offset: 0, syncedAt: 0, self: null, locks: [], timeline: [], lock: '', listError: null, seen: {} };
  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function serverNow() { return Date.now() + st.offset; }
  function sync(m) { if (typeof m.serverNow === 'number') { st.offset = m.serverNow - Date.now(); st.syncedAt = performance.now(); } }
  function color(holder) {
    if (holder === null || holder === undefined) return '#d8dde3';
    if (!colours[holder]) colours[holder] = nextColour < PALETTE.length ? PALETTE[nextColour++] : 'hsl(' + ((Object.keys(colours).length * 137.508) % 360) + ' 55% 45%)';
    return colours[holder];
  }
  function pad(n) { return n < 10 ? '0' + n : String(n); }
  function fmtDur(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return Math.max(0, Math.round(ms)) + 'ms';
    var s = ms / 1000;
    if (s < 60) return s.toFixed(1) + 's';
    var m = Math.floor(s / 60);
    if (m < 60) return m + 'm ' + pad(Math.floor(s % 60)) + 's';
    return Math.floor(m / 60) + 'h ' + pad(m % 60) + 'm';
  }
  function fmtTime(t) { var d = new Date(t); return pad(d.getHours()) + ':' + pad(d.getMinutes()) + ':' + pad(d.getSeconds()); }
  function left(ms) { return ms === null || ms === undefined ? null : Math.max(0, ms - (performance.now() - st.syncedAt)); }

  function setConn(kind, text) { var c = $('conn'); c.className = 'pill ' + kind; c.textContent = text; }

  function apply(m) {
    sync(m);
    if (m.self) st.self = m.self;
    if (m.locks) st.locks = m.locks;
    if ('listError' in m) st.listError = m.listError;
    if (m.lock) st.lock = m.lock;
    if (m.store) $('store').textContent = m.store;
    if (m.identity) $('identity').textContent = m.identity;
    if (m.timeline) { st.timeline = []; st.seen = {}; m.timeline.forEach(addEntry); }
    st.timeline.forEach(function (e) { if (e.holder) color(e.holder); });
    render();
  }
  function addEntry(e) {
    if (st.seen[e.seq]) return;
    st.seen[e.seq] = true;
    st.timeline.push(e);
    if (st.timeline.length > 1000) st.timeline.splice(0, st.timeline.length - 1000);
    if (e.holder) color(e.holder);
  }

  function render() { renderSelf(); renderLocks(); renderTimeline(); renderBanner(); }

  function renderBanner() {
    var b = $('banner');
    b.textContent = st.listError ? 'Cannot list locks: ' + st.listError : '';
    b.className = 'banner' + (st.listError ? ' show' : '');
  }

  function renderSelf() {
    var s = st.self; if (!s) return;
    var leader = $('leader');
    leader.textContent = s.holder || (s.ready ? 'nobody' : 'unknown (store not reached yet)');
    leader.className = s.holder ? '' : 'free';
    leader.setAttribute('data-term', String(s.term));
    var role = $('role');
    role.textContent = s.isSelf ? 'this instance' : 'standby';
    role.className = 'role ' + (s.isSelf ? 'leader' : 'standby');
    $('term').textContent = s.term ? String(s.term) : '–';
    $('host').textContent = s.hostname || '–';
    document.title = 'baton · ' + s.lock + ' · ' + (s.holder || 'free');
  }

  function renderLocks() {
    var body = $('locks');
    body.textContent = '';
    if (!st.locks.length) { var tr0 = el('tr'); var td0 = el('td', 'empty', 'no locks yet'); td0.colSpan = 6; tr0.appendChild(td0); body.appendChild(tr0); return; }
    st.locks.forEach(function (r) {
      var tr = el('tr', r.served ? 'served' : '');
      tr.setAttribute('data-lock', r.lock);
      tr.appendChild(el('td', '', r.lock + (r.served ? ' (served)' : '')));
      var h = el('td', 'holder');
      if (r.holder) { var sw = el('span', 'swatch'); sw.style.background = color(r.holder); h.appendChild(sw); h.appendChild(document.createTextNode(r.holder + (r.isSelf ? ' (this instance)' : ''))); }
      else { h.appendChild(el('span', 'free', 'free')); }
      tr.appendChild(h);
      tr.appendChild(el('td', 'num', r.term || '–'));
      tr.appendChild(el('td', '', r.hostname || '–'));
      var ex = el('td', 'num countdown');
      ex.setAttribute('data-lock', r.lock);
      tr.appendChild(ex);
      tr.appendChild(el('td', 'num', r.transitions === null ? '–' : r.transitions));
      body.appendChild(tr);
    });
    tick();
  }

  function tick() {
    var cells = document.querySelectorAll('td.countdown');
    for (var i = 0; i < cells.length; i++) {
      var lock = cells[i].getAttribute('data-lock');
      var r = st.locks.find(function (x) { return x.lock === lock; });
      if (!r || !r.holder) { cells[i].textContent = '–'; cells[i].className = 'num countdown'; continue; }
      var ms = left(r.expiresInMs);
      cells[i].textContent = ms === 0 ? 'expired' : fmtDur(ms);
      cells[i].className = 'num countdown' + (ms === 0 ? ' expired' : '');
    }
    var s = st.self;
    if (!s) return;
    $('expires').textContent = s.holder ? fmtDur(left(s.expiresInMs)) : '–';
    $('since').textContent = s.since ? fmtTime(Date.parse(s.since)) + ' (' + fmtDur(serverNow() - Date.parse(s.since)) + ' ago)' : '–';
  }

  function describe(e) {
    var who = e.holder || 'nobody';
    switch (e.kind) {
      case 'observed': return who + ' holds ' + e.lock + ' (term ' + e.term + ')';
      case 'acquired': return who + ' acquired ' + e.lock + ' (term ' + e.term + ')' + (e.previousHolder ? ' after ' + e.previousHolder + ' released it' : '');
      case 'failover': return who + ' took over ' + e.lock + ' from ' + e.previousHolder + ' (term ' + e.term + ')' +
        (typeof e.afterLastRenewalMs === 'number' ? ', ' + fmtDur(e.afterLastRenewalMs) + ' after its last renewal' : '') + ' — the old leader stopped renewing';
      case 'released': return (e.previousHolder || 'the holder') + ' released ' + e.lock + ' (term ' + e.term + ')';
      case 'stepped-down': return 'this instance stopped leading ' + e.lock + ' (term ' + e.term + '): ' + e.reason;
      default: return e.kind;
    }
  }

  function renderTimeline() {
    var now = serverNow();
    var first = st.timeline.length ? st.timeline[0].at : now;
    // Show everything kept, up to the last ten minutes, with a little room before the first change.
    var start = Math.max(now - WINDOW_MS, first - Math.max(2000, (now - first) * 0.08));
    if (now - start < MIN_WINDOW_MS) start = now - MIN_WINDOW_MS;
    var span = now - start;
    var pct = function (t) { return Math.min(100, Math.max(0, ((t - start) / span) * 100)); };
    var byLock = {}, order = [];
    st.timeline.forEach(function (e) { if (!byLock[e.lock]) { byLock[e.lock] = []; order.push(e.lock); } byLock[e.lock].push(e); });
    order.sort(function (a, b) { return a === st.lock ? -1 : b === st.lock ? 1 : a < b ? -1 : 1; });
    var lanes = $('lanes'); lanes.textContent = '';
    var holders = {};
    if (!order.length) lanes.appendChild(el('div', 'empty', 'no changes seen yet'));
    order.forEach(function (lock) {
      var lane = el('div', 'lane');
      lane.setAttribute('data-lock', lock);
      lane.appendChild(el('div', 'name', lock));
      var track = el('div', 'track');
      var changes = byLock[lock].filter(function (e) { return e.kind !== 'stepped-down'; });
      changes.forEach(function (e, i) {
        var end = i + 1 < changes.length ? changes[i + 1].at : now;
        if (end < start) return;
        var a = pct(e.at), b = pct(end);
        var seg = el('div', 'seg' + (e.holder ? '' : ' none'), e.holder ? e.holder + ' · t' + e.term : 'free');
        seg.style.left = a + '%'; seg.style.width = Math.max(0.3, b - a) + '%';
        if (e.holder) { seg.style.background = color(e.holder); holders[e.holder] = true; }
        seg.title = describe(e) + ' — from ' + fmtTime(e.at) + (i + 1 < changes.length ? ' to ' + fmtTime(end) : ' until now');
        track.appendChild(seg);
      });
      byLock[lock].forEach(function (e) {
        if ((e.kind !== 'failover' && e.kind !== 'stepped-down') || e.at < start) return;
        var m = el('div', 'mark' + (e.kind === 'failover' ? ' failover' : ' step'));
        m.style.left = pct(e.at) + '%';
        m.title = describe(e);
        track.appendChild(m);
      });
      lane.appendChild(track);
      lanes.appendChild(lane);
    });
    var axis = $('axis'); axis.textContent = '';
    for (var k = 0; k <= 4; k++) { var t = start + (span * k) / 4; var s = el('span', '', k === 4 ? 'now' : fmtTime(t)); s.style.left = (k * 25) + '%'; axis.appendChild(s); }
    var legend = $('legend'); legend.textContent = '';
    Object.keys(holders).sort().forEach(function (h) { var i = el('span'); var sw = el('span', 'swatch'); sw.style.background = color(h); i.appendChild(sw); i.appendChild(document.createTextNode(h)); legend.appendChild(i); });
    var fo = el('span'); fo.appendChild(el('span', 'fo')); fo.appendChild(document.createTextNode('failover (leader stopped renewing; another took over)')); legend.appendChild(fo);
    var list = $('events'); list.textContent = '';
    st.timeline.slice(-MAX_EVENTS).reverse().forEach(function (e) {
      var li = el('li', e.kind);
      li.setAttribute('data-kind', e.kind);
      li.setAttribute('data-term', String(e.term));
      li.appendChild(el('time', '', fmtTime(e.at)));
      li.appendChild(el('span', 'tag ' + e.kind, e.kind));
      li.appendChild(el('span', '', describe(e)));
      list.appendChild(li);
    });
  }

  function poll() {
    setConn('poll', 'polling');
    fetch('api/state', { cache: 'no-store' }).then(function (r) { return r.json(); }).then(apply)
      .catch(function () { setConn('down', 'server unreachable'); })
      .then(function () { setTimeout(poll, 2000); });
  }

  function connect() {
    if (typeof EventSource !== 'function') return poll();
    var es = new EventSource('events');
    es.addEventListener('open', function () { setConn('live', 'live'); });
    es.addEventListener('error', function () { setConn('down', 'reconnecting…'); });
    es.addEventListener('snapshot', function (ev) { setConn('live', 'live'); apply(JSON.parse(ev.data)); });
    es.addEventListener('update', function (ev) { apply(JSON.parse(ev.data)); });
    es.addEventListener('timeline', function (ev) { var m = JSON.parse(ev.data); sync(m); addEntry(m.entry); renderTimeline(); });
  }

  connect();

  // Shard groups (baton serve --shard-group G): polled from /shards, drawn as one row of cells
  // per group, each cell a shard coloured by its owner; the card stays hidden without groups.
  function renderShards(groups) {
    var box = $('shards');
    box.textContent = '';
    $('shards-card').hidden = !groups.length;
    groups.forEach(function (g) {
      var head = el('div', 'meta', g.error ? g.group + ': ' + g.error : g.group + ': ' + g.shards + ' shards, ' +
        g.members.filter(function (m) { return !m.left; }).map(function (m) { return m.identity + ' owns ' + m.owned; }).join(', '));
      box.appendChild(head);
      if (g.error) return;
      var row = el('div', 'shard-row');
      g.assignment.forEach(function (a) {
        var cell = el('span', 'shard', String(a.shard));
        cell.title = 'shard ' + a.shard + ': ' + (a.owner ? a.owner + ' (term ' + a.term + ')' : 'nobody') + (a.assigned && a.assigned !== a.owner ? ', moving to ' + a.assigned : '');
        cell.style.background = a.owner ? color(a.owner) : '#e5e7eb';
        row.appendChild(cell);
      });
      box.appendChild(row);
    });
  }
  function pollShards() {
    fetch('shards').then(function (r) { return r.json(); }).then(renderShards).catch(function () {}).then(function () { setTimeout(pollShards, 2000); });
  }
  pollShards();

  // The served lock's candidate registry (GET /candidates): live candidates, the leader first
  // marked, and who would be preferred; the card stays hidden while nobody is registered.
  function renderCandidates(view) {
    var live = (view.candidates || []).filter(function (c) { return c.live; });
    $('candidates-card').hidden = !live.length;
    var body = $('candidates');
    body.textContent = '';
    live.forEach(function (c) {
      var tr = el('tr');
      tr.setAttribute('data-candidate', c.identity);
      var labels = Object.keys(c.labels).map(function (k) { return k + '=' + c.labels[k]; }).join(', ');
      [(c.leader ? '★ ' : '') + c.identity, c.host + ' pid ' + c.pid, c.appVersion || '–', c.priority === null ? '–' : String(c.priority), labels || '–',
        fmtTime(c.startedAt), fmtDur(c.lastSeenAgoMs) + ' ago'].forEach(function (v) { tr.appendChild(el('td', '', v)); });
      body.appendChild(tr);
    });
    var p = view.preferred || {};
    $('preferred').textContent = live.length ? 'Preferred: newest ' + (p.newest || 'nobody') + ' · oldest ' + (p.oldest || 'nobody') + ' · priority ' +
      (p.priority || 'nobody') + ' · a graceful stop hands over to ' + (p.onStop || 'nobody') : '';
  }
  function pollCandidates() {
    fetch('candidates').then(function (r) { return r.json(); }).then(renderCandidates).catch(function () {}).then(function () { setTimeout(pollCandidates, 2000); });
  }
  pollCandidates();
  setInterval(tick, 250);
  setInterval(renderTimeline, 1000);
})();
`;
