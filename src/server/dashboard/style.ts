/** DASHBOARD_CSS styles the dashboard page (light, system fonts, no external assets). */
export const DASHBOARD_CSS = `
:root { --fg:#1d2733; --muted:#5f6c7b; --line:#e3e8ee; --bg:#f5f7fa; --card:#fff; --accent:#1f6feb; --bad:#d1242f; --ok:#1a7f37; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; color:var(--fg); background:var(--bg); }
header { display:flex; align-items:center; gap:14px; padding:14px 28px; background:#17202b; color:#fff; }
header h1 { margin:0; font-size:18px; letter-spacing:.3px; }
header .lock { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; color:#c9d4e0; }
header .spacer { flex:1; }
.pill { display:inline-flex; align-items:center; gap:6px; padding:2px 10px; border-radius:999px; font-size:12px; background:#2b3745; color:#dfe7ef; }
.pill::before { content:""; width:8px; height:8px; border-radius:50%; background:#8b98a5; }
.pill.live::before { background:#3fb950; } .pill.down::before { background:#f85149; } .pill.poll::before { background:#d29922; }
main { max-width:1180px; margin:0 auto; padding:22px 28px 40px; display:grid; gap:18px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:18px 20px; }
.card h2 { margin:0 0 12px; font-size:13px; text-transform:uppercase; letter-spacing:.8px; color:var(--muted); }
.hero { display:grid; grid-template-columns: 2fr repeat(4, 1fr); gap:18px; align-items:start; }
.hero .k { font-size:12px; color:var(--muted); text-transform:uppercase; letter-spacing:.6px; }
.hero .v { font-size:16px; margin-top:2px; font-variant-numeric:tabular-nums; overflow-wrap:anywhere; }
.hero .v.big { font-size:22px; font-weight:600; }
.role { display:inline-block; padding:1px 8px; border-radius:6px; font-size:12px; font-weight:600; margin-left:8px; vertical-align:middle; }
.role.leader { background:#dafbe1; color:var(--ok); } .role.standby { background:#eef1f5; color:var(--muted); }
.meta { margin-top:12px; color:var(--muted); font-size:12px; overflow-wrap:anywhere; }
.banner { display:none; padding:8px 12px; border-radius:8px; background:#fff1f0; color:var(--bad); border:1px solid #ffd2cf; }
.banner.show { display:block; }
table { width:100%; border-collapse:collapse; }
th, td { text-align:left; padding:8px 10px; border-bottom:1px solid var(--line); white-space:nowrap; }
th { font-size:12px; color:var(--muted); font-weight:600; }
td.holder { white-space:normal; overflow-wrap:anywhere; }
td.num { font-variant-numeric:tabular-nums; }
tr.served td:first-child { font-weight:600; }
.swatch { display:inline-block; width:10px; height:10px; border-radius:3px; margin-right:6px; vertical-align:baseline; }
.free { color:var(--muted); font-style:italic; }
.shard-row { display:flex; flex-wrap:wrap; gap:3px; margin:6px 0 12px; }
.shard { display:inline-block; min-width:22px; padding:2px 3px; border-radius:3px; color:#fff; font-size:11px; text-align:center; }
.expired { color:var(--bad); }
.lanes { display:grid; gap:10px; }
.lane { display:grid; grid-template-columns:150px 1fr; gap:12px; align-items:center; }
.lane .name { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12px; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
.track { position:relative; height:30px; background:repeating-linear-gradient(90deg,#f3f5f8 0 10px,#eef1f5 10px 20px); border-radius:6px; overflow:hidden; }
.seg { position:absolute; top:0; bottom:0; color:#fff; font-size:11px; line-height:30px; padding:0 6px; overflow:hidden; white-space:nowrap; text-overflow:ellipsis; border-right:1px solid rgba(255,255,255,.7); }
.seg.none { background:#d8dde3; color:#5f6c7b; }
.mark { position:absolute; top:-2px; bottom:-2px; width:3px; margin-left:-1px; background:var(--bad); }
.mark.step { background:#17202b; width:2px; }
.axis { position:relative; height:18px; margin-left:162px; font-size:11px; color:var(--muted); }
.axis span { position:absolute; transform:translateX(-50%); white-space:nowrap; }
.axis span:first-child { transform:none; } .axis span:last-child { transform:translateX(-100%); }
.legend { display:flex; flex-wrap:wrap; gap:6px 16px; margin:12px 0 0; font-size:12px; color:var(--muted); }
.legend .fo { display:inline-block; width:3px; height:12px; background:var(--bad); margin-right:6px; vertical-align:middle; }
ol.events { list-style:none; margin:14px 0 0; padding:0; max-height:300px; overflow:auto; border-top:1px solid var(--line); }
ol.events li { display:grid; grid-template-columns:78px 92px 1fr; gap:10px; padding:6px 2px; border-bottom:1px solid var(--line); }
ol.events time { color:var(--muted); font-variant-numeric:tabular-nums; }
.tag { font-size:11px; font-weight:600; text-transform:uppercase; letter-spacing:.4px; padding:1px 6px; border-radius:5px; background:#eef1f5; color:var(--muted); justify-self:start; align-self:start; }
.tag.failover { background:#ffebe9; color:var(--bad); } .tag.acquired, .tag.observed { background:#ddf4ff; color:#0550ae; }
.tag.stepped-down { background:#fff8c5; color:#7d4e00; }
.empty { color:var(--muted); font-style:italic; padding:6px 0; }
@media (max-width:760px) { .hero { grid-template-columns:1fr 1fr; } .lane { grid-template-columns:1fr; } .axis { margin-left:0; } }
`;
