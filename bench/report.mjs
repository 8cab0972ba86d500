// Turns sl-bench's raw samples into the results table (Markdown), a JSON
// summary and the gnuplot input for the chart.
//
//   node bench/report.mjs RAW.json --out DIR [--readme bench/README.md]
//
// DIR gets results.md, results.json (summary + raw samples), chart.dat and
// chart.gp (gnuplot writes DIR/results.png). With --readme, the part of the
// README between the results markers is replaced by the new table.
import fs from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const rawPath = args[0];
const outDir = opt('--out');
const readmePath = opt('--readme');
if (!rawPath || !outDir) {
  console.error('usage: node bench/report.mjs RAW.json --out DIR [--readme README.md]');
  process.exit(2);
}
const raw = JSON.parse(fs.readFileSync(rawPath, 'utf8'));
const S = raw.samples || {};
const MARK_BEGIN = '<!-- results:begin -->';
const MARK_END = '<!-- results:end -->';

// ---- statistics -------------------------------------------------------------

const sorted = (v) => [...v].sort((a, b) => a - b);
function quantile(v, q) {
  if (!v.length) return null;
  const s = sorted(v);
  const i = Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1));
  return s[i];
}
function median(v) {
  if (!v.length) return null;
  const s = sorted(v);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
const samples = (wl, m, side) => (S[wl]?.[m]?.[side] || []).filter((x) => Number.isFinite(x));

// One cell: {v, lo, hi, n}. agg: median (min–max of the samples), p50 /
// p99 of the pooled samples (p50's range: the per-run p50s).
function cell(row, side) {
  const v = samples(row.wl, row.m, side);
  if (!v.length) return null;
  if (row.agg === 'p50' || row.agg === 'p99') {
    const runs = samples(row.wl, 'p50_run_ms', side);
    const val = quantile(v, row.agg === 'p50' ? 0.5 : 0.99);
    return row.agg === 'p50' && runs.length
      ? { v: val, lo: Math.min(...runs), hi: Math.max(...runs), n: v.length }
      : { v: val, n: v.length };
  }
  return { v: median(v), lo: Math.min(...v), hi: Math.max(...v), n: v.length };
}

// ---- the rows ---------------------------------------------------------------

const gib = (b) => (b >= 1 << 30 ? `${b / 2 ** 30} GiB` : `${b / 2 ** 20} MiB`);
const C = raw.config || {};
const rows = [];
const row = (r) => rows.push({ agg: 'median', ...r });
const UP = 'higher', DOWN = 'lower';

// Rows with `side` put that side's samples in the sluice column: sluiced
// with exec-mode runc (bench/run's second sluiced) next to the default,
// native.
const RUNC = 'sluice-runc';
row({ sec: '1. exec `true` round trip (RPC → URL → upgrade → status), SPDY; sluice: exec-mode native unless said' });
row({ wl: 'exec_true', m: 'total_ms', agg: 'p50', label: 'round trip p50', unit: 'ms', better: DOWN, target: { vs: 'containerd', op: '<=', x: 0.4 } });
row({ wl: 'exec_true', m: 'total_ms', agg: 'p99', label: 'round trip p99', unit: 'ms', better: DOWN });
row({ wl: 'exec_true', m: 'total_ms', agg: 'p50', side: RUNC, label: 'round trip p50, sluice exec-mode runc', unit: 'ms', better: DOWN });
row({ wl: 'exec_true', m: 'total_ms', agg: 'p99', side: RUNC, label: 'round trip p99, sluice exec-mode runc', unit: 'ms', better: DOWN });
row({ wl: 'exec_split', m: 'rpc_ms', label: 'split: Exec RPC', unit: 'ms', better: DOWN });
row({ wl: 'exec_split', m: 'upgrade_ms', label: 'split: connect + upgrade (101)', unit: 'ms', better: DOWN });
row({ wl: 'exec_split', m: 'start_ms', label: 'split: streams + process start', unit: 'ms', better: DOWN });
row({ wl: 'exec_split', m: 'status_ms', label: 'split: exit → status received', unit: 'ms', better: DOWN });
row({ wl: 'exec_split', m: 'streaming_ms', derived: ['rpc_ms', 'upgrade_ms', 'status_ms'], label: 'streaming part (RPC + upgrade + status)', unit: 'ms', better: DOWN, target: { op: '<=', abs: 1 } });

row({ sec: `1c. ExecSync probe cost: ${C.probe_iters ?? '?'} ExecSync of \`true\` one after the other (as a kubelet's exec probe), per 1,000 calls` });
row({ wl: 'exec_probe', m: 'wall_s', label: 'wall time, exec-mode native', unit: 's', better: DOWN });
row({ wl: 'exec_probe', m: 'wall_s', side: RUNC, label: 'wall time, exec-mode runc', unit: 's', better: DOWN });
row({ wl: 'exec_probe', m: 'cpu_s', label: 'server CPU, exec-mode native', unit: 's', better: DOWN, target: { vs: 'containerd', op: '<=', x: 0.2 } });
row({ wl: 'exec_probe', m: 'cpu_s', side: RUNC, label: 'server CPU, exec-mode runc', unit: 's', better: DOWN });
row({ wl: 'exec_probe', m: 'cpu_reaped_s', label: 'server CPU + the children it reaped (runc, starter, `true`), native', unit: 's', better: DOWN });
row({ wl: 'exec_probe', m: 'cpu_reaped_s', side: RUNC, label: 'server CPU + the children it reaped (runc, starter, `true`), runc', unit: 's', better: DOWN });

row({ sec: `2. exec stdout ${gib(C.stdout_bytes || 0)} (dd from /dev/zero)` });
for (const ws of ['64k', '4k'])
  for (const tr of ['spdy', 'websocket']) {
    const what = `${ws === '64k' ? '64 KiB' : '4 KiB'} writes, ${tr === 'spdy' ? 'SPDY' : 'WebSocket'}`;
    row({ wl: 'exec_stdout', m: `mibps_${ws}_${tr}`, label: `throughput, ${what}`, unit: 'MiB/s', better: UP, limit: true, target: { vs: 'containerd', op: '>=', x: 5 } });
    row({ wl: 'exec_stdout', m: `cpu_${ws}_${tr}`, label: `server CPU, ${what}`, unit: 's/GiB', better: DOWN, target: { vs: 'containerd', op: '<=', x: 0.2 } });
    row({ wl: 'exec_stdout', m: `ccpu_${ws}_${tr}`, label: `client CPU (sl-bench), ${what}`, unit: 's/GiB', better: DOWN, limit: true });
  }

row({ sec: `3. stdin ${gib(C.stdin_bytes || 0)} into \`wc -c\`, with EOF` });
for (const tr of ['spdy', 'websocket']) {
  const what = tr === 'spdy' ? 'SPDY (FIN)' : 'WebSocket (v5 CLOSE)';
  row({ wl: 'exec_stdin', m: `mibps_stdin_${tr}`, label: `throughput, ${what}`, unit: 'MiB/s', better: UP, limit: true, target: { vs: 'containerd', op: '>=', x: 5 } });
  row({ wl: 'exec_stdin', m: `cpu_stdin_${tr}`, label: `server CPU, ${what}`, unit: 's/GiB', better: DOWN, target: { vs: 'containerd', op: '<=', x: 0.2 } });
  row({ wl: 'exec_stdin', m: `ccpu_stdin_${tr}`, label: `client CPU (sl-bench), ${what}`, unit: 's/GiB', better: DOWN, limit: true });
}

row({ sec: `4. port-forward ${gib(C.pf_bytes || 0)}` });
for (const dir of ['down', 'up'])
  for (const tr of ['spdy', 'tunnel']) {
    const what = `${dir === 'down' ? 'download' : 'upload'}, ${tr === 'spdy' ? 'SPDY' : 'SPDY in WebSocket'}`;
    row({ wl: 'pf', m: `mibps_${dir}_${tr}`, label: `throughput, ${what}`, unit: 'MiB/s', better: UP, limit: true, target: { vs: 'containerd', op: '>=', x: 5 } });
    row({ wl: 'pf', m: `cpu_${dir}_${tr}`, label: `server CPU, ${what}`, unit: 's/GiB', better: DOWN, target: { vs: 'containerd', op: '<=', x: 0.2 } });
    row({ wl: 'pf', m: `ccpu_${dir}_${tr}`, label: `client CPU (sl-bench), ${what}`, unit: 's/GiB', better: DOWN, limit: true });
  }

row({ sec: `5. head-of-line: 8 uploads of ${gib(C.hol_bytes || 0)} on one SPDY session` });
row({ wl: 'hol', m: 'others_mibps_reading', label: 'the 7, all 8 reading', unit: 'MiB/s', better: UP });
row({ wl: 'hol', m: 'others_mibps_stalled', label: 'the 7, 8th peer never reads', unit: 'MiB/s', better: UP });
row({ wl: 'hol', m: 'ratio_pct', label: 'the 7 keep', unit: '%', better: UP, target: { op: '>=', abs: 90 } });

for (const n of C.conc || []) {
  const wl = `conc${n}`;
  row({ sec: `6. ${n} concurrent exec sessions of \`sleep ${C.conc_sleep_s}\`` });
  row({ wl, m: 'complete_s', label: 'all finished after', unit: 's', better: DOWN, target: n <= 100 ? { op: '<=', abs: 6 } : undefined });
  row({ wl, m: 'failed', label: 'sessions failed', unit: '', better: DOWN });
  row({ wl, m: 'live_peak', label: 'sessions live at the peak', unit: '', better: UP });
  row({ wl, m: 'rss_kib_per_session', label: 'server RSS per session (daemon + monitor/shim)', unit: 'KiB', better: DOWN, target: n >= 1000 ? { op: '<=', abs: 16 } : undefined });
  row({ wl, m: 'daemon_rss_kib_per_session', label: '… of which the daemon (sluiced, containerd)', unit: 'KiB', better: DOWN });
  row({ wl, m: 'runc_rss_kib_per_session', label: 'RSS of runc processes kept per session', unit: 'KiB', better: DOWN });
  row({ wl, m: 'fds_per_session', label: 'server fds per session', unit: '', better: DOWN });
}

// Workload 7 twice: `yes` at full speed (faster than any client reads, so
// sluice drops the clients by design, issue 4), then a writer paced at
// --attach-rate, which a reading client can follow.
const ATTACH = {
  attach: `7. attach fan-out, full speed: ${C.attach_clients} clients on \`yes\` with 1000-byte lines`,
  attach_paced: `7b. attach fan-out, paced: ${C.attach_clients} clients on a container writing ` +
    `${C.attach_rate_mibps ?? '?'} MiB/s of 1000-byte lines`,
};
const ALL_DROPPED = 'n/a: clients dropped with all reading';
for (const [wl, sec] of Object.entries(ATTACH)) {
  if (wl === 'attach_paced' && C.attach_rate_mibps == null) continue; // an older sl-bench
  row({ sec });
  row({ wl, m: 'log_mibps_alone', label: 'log rate, no client', unit: 'MiB/s', better: UP });
  row({ wl, m: 'client_mibps_all', label: 'per-client rate, all reading', unit: 'MiB/s', better: UP });
  row({ wl, m: 'dropped_all', label: 'reading clients dropped, all reading', unit: '', better: DOWN });
  row({ wl, m: 'client_mibps_stalled', label: 'per-client rate, one stalled', unit: 'MiB/s', better: UP });
  row({ wl, m: 'dropped_stalled', label: 'reading clients dropped, one stalled', unit: '', better: DOWN });
  row({ wl, m: 'clients_kept_pct', label: 'clients keep (stalled vs all reading)', unit: '%', better: UP, target: { op: '>=', abs: 95 }, na: { m: 'clients_kept_na', text: ALL_DROPPED } });
  row({ wl, m: 'log_mibps_all', label: 'log rate, all reading', unit: 'MiB/s', better: UP });
  row({ wl, m: 'log_mibps_stalled', label: 'log rate, one stalled', unit: 'MiB/s', better: UP });
  row({ wl, m: 'log_kept_pct', label: 'log keeps (stalled vs all reading)', unit: '%', better: UP, target: { op: '>=', abs: 95 } });
}

row({ sec: `8. the daemon restarted (SIGKILL, started again) a quarter into an exec stdout transfer of ${gib(C.restart_bytes || 0)}` });
for (const tr of ['spdy', 'websocket']) {
  const what = tr === 'spdy' ? 'SPDY' : 'WebSocket';
  row({ wl: 'restart', m: `lost_mib_${tr}`, label: `bytes lost, ${what}`, unit: 'MiB', better: DOWN, target: { op: '<=', abs: 0 } });
  row({ wl: 'restart', m: `status_${tr}`, label: `exit status received (1 = yes), ${what}`, unit: '', better: UP, target: { op: '>=', abs: 1 } });
  row({ wl: 'restart', m: `stall_ms_${tr}`, label: `longest stall at the reader, ${what} (transfers that completed)`, unit: 'ms', better: DOWN });
}
row({ wl: 'restart', m: 'back_s', label: 'daemon answering CRI again after', unit: 's', better: DOWN });

// ---- evaluation ---------------------------------------------------------------

// Derived rows: the sum of other rows' medians (no range).
function derivedCell(r, side) {
  let sum = 0;
  for (const m of r.derived) {
    const c = cell({ ...r, m, agg: 'median' }, side);
    if (!c) return null;
    sum += c.v;
  }
  return { v: sum };
}

// Runs in which a row had no meaning (r.na.m counts them), e.g. "clients
// keep" when every reading client was dropped in both phases.
const naRuns = (r, side) => samples(r.wl, r.na.m, side).length;

function evaluate(r) {
  const get = (side) => (r.derived ? derivedCell(r, side) : cell(r, side));
  const out = { ...r, sluice: get(r.side || 'sluice'), containerd: get('containerd') };
  if (r.na) out.naRuns = { sluice: naRuns(r, r.side || 'sluice'), containerd: naRuns(r, 'containerd') };
  if (r.limit) {
    out.tcp = get('tcp');
    out.pipe = get('pipe');
  }
  const s = out.sluice?.v, c = out.containerd?.v;
  if (s != null && c) out.ratio = s / c;
  if (s != null && out.tcp?.v) out.ratioLimit = s / out.tcp.v;
  const t = r.target;
  if (t && s != null) {
    const lhs = t.vs ? out.ratio : s;
    const rhs = t.vs ? t.x : t.abs;
    if (lhs != null) {
      out.met = t.op === '<' ? lhs < rhs : t.op === '<=' ? lhs <= rhs : lhs >= rhs;
      out.by = lhs / rhs;
    }
  }
  return out;
}
const evaluated = rows.map((r) => (r.sec ? r : evaluate(r)));

// ---- formatting ---------------------------------------------------------------

function num(x) {
  if (x == null) return '–';
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toPrecision(2);
}
function fmtCell(c, na = 0, naText = 'n/a') {
  if (!c) return na ? naText : 'n/a';
  const v = c.lo != null && c.hi != null && c.lo !== c.hi
    ? `${num(c.v)} (${num(c.lo)}–${num(c.hi)})`
    : num(c.v);
  return na ? `${v}; ${naText} in ${na} run${na > 1 ? 's' : ''}` : v;
}
const sideCell = (r, side) => fmtCell(r[side], r.naRuns?.[side], r.na?.text);
const ratio = (x) => (x == null ? '–' : `${x >= 10 ? x.toFixed(0) : x.toFixed(2)}×`);
function targetText(t) {
  if (!t) return '';
  if (t.vs) return `${t.op} ${t.x}× containerd`;
  return `${t.op} ${t.abs}`;
}
function metText(r) {
  if (!r.target) return '';
  if (r.met == null && r.naRuns?.sluice) return 'n/a (see below)';
  if (r.met == null) return 'not measured';
  return r.met ? 'yes' : `**no**`;
}

function table() {
  const L = [];
  L.push('| workload | unit | sluice | containerd | loopback TCP | pipe | sluice/containerd | sluice/TCP | target | met |');
  L.push('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of evaluated) {
    if (r.sec) {
      L.push(`| **${r.sec}** | | | | | | | | | |`);
      continue;
    }
    L.push(`| ${r.label} | ${r.unit} | ${sideCell(r, 'sluice')} | ${sideCell(r, 'containerd')} | ` +
      `${r.limit ? fmtCell(r.tcp) : ''} | ${r.limit ? fmtCell(r.pipe) : ''} | ${ratio(r.ratio)} | ` +
      `${r.limit ? ratio(r.ratioLimit) : ''} | ${targetText(r.target)} | ${metText(r)} |`);
  }
  return L.join('\n');
}

function machineText() {
  const m = raw.machine || {};
  const load = (m.loadavg_at_start || []).map((x) => x.toFixed(2)).join(' ');
  const rts = Object.entries(raw.runtimes || {})
    .map(([k, v]) => (v.exec_only ? `${k}: ${v.version}; exec rows only (sluiced with exec-mode runc)`
      : `${k}: ${v.version}; exec over WebSocket negotiates \`${v.websocket_exec}\`; ` +
      `port-forward tunnel: ${v.pf_tunnel ? 'yes' : `no (${v.pf_tunnel_error})`}`));
  return [
    `Machine: ${m.nproc} CPUs, ${m.model}, ${m.kernel}, ${m.memory} memory; load average at start ${load}.`,
    ...rts.map((s) => `- ${s}`),
    `Runs: ${C.runs} per workload (concurrency: ${C.conc_runs}); exec \`true\`: ${C.true_iters} per run; ` +
      `split: ${C.split_iters} per run; ExecSync probe: ${C.probe_iters ?? '–'} per run. Duration ${Math.round(raw.duration_s || 0)} s.`,
  ].join('\n');
}

function notesText() {
  const L = [];
  for (const [wl, kv] of Object.entries(raw.info || {}))
    for (const [k, v] of Object.entries(kv)) L.push(`- ${wl}, ${k}: ${v}`);
  const errs = raw.errors || [];
  if (errs.length) {
    L.push('', `Errors during the run (${errs.length}):`);
    for (const e of errs.slice(0, 30)) L.push(`- ${e.replace(/\|/g, '\\|')}`);
  }
  return L.join('\n');
}

function misses() {
  return evaluated.filter((r) => !r.sec && r.target && r.met === false)
    .map((r) => `- ${r.label} (${r.wl}): ${sideCell(r, 'sluice')} ${r.unit}, target ${targetText(r.target)}` +
      (r.target.vs ? `, ratio ${ratio(r.ratio)}` : ''));
}

// ---- what workload 7 shows, in words ---------------------------------------

const med = (wl, m, side) => median(samples(wl, m, side));
const mibps = (x) => (x == null ? 'n/a' : `${num(x)} MiB/s`);
const count = (x) => (x == null ? 'n/a' : Number.isInteger(x) ? String(x) : num(x));
// The server's own words give the backlog bound ("fell more than N bytes behind").
function backlogText() {
  const m = JSON.stringify(raw.info || {}).match(/fell more than (\d+) bytes behind/);
  return m ? `${num(m[1] / 2 ** 20)} MiB` : 'a bounded backlog';
}

function attachFull() {
  const wl = 'attach', n = C.attach_clients;
  const d = (m) => med(wl, m, 'sluice');
  const c = (m) => med(wl, m, 'containerd');
  if (d('dropped_all') == null && c('dropped_all') == null) return null;
  const L = [`**7, full speed.** sluice-mon keeps at most ${backlogText()} per attach session ` +
    '(SL_MON_ATTACH_BACKLOG) and disconnects a client that falls further behind, with a clear ' +
    'error (issue 4), so a slow client never slows the container, its log or the other clients.'];
  if (d('dropped_all') != null)
    L.push(`\`yes\` writes ${mibps(d('log_mibps_alone'))} here (sluice, log rate with no client), ` +
      'more than an attach client reads, so the clients fall behind: sluice dropped ' +
      `${count(d('dropped_all'))} of ${n} with all reading and ${count(d('dropped_stalled'))} of ` +
      `${n - 1} reading clients with one stalled (medians), while the log ran on at ` +
      `${mibps(d('log_mibps_all'))} and ${mibps(d('log_mibps_stalled'))}. The per-client rate is ` +
      'what a client got before it was dropped; in a run where clients were dropped with all ' +
      'reading there is no baseline, and "clients keep" is n/a, not 0 %.');
  if (c('dropped_all') != null) {
    const none = c('dropped_all') === 0 && c('dropped_stalled') === 0;
    L.push(`containerd ${none ? 'drops no client' : 'dropped'} (${count(c('dropped_all'))} and ` +
      `${count(c('dropped_stalled'))}); ${none ? 'instead ' : ''}it slows the container, and with ` +
      'it the log, to what its slowest client takes: log rate ' +
      `${mibps(c('log_mibps_alone'))} with no client, ${mibps(c('log_mibps_all'))} with all ` +
      `reading, ${mibps(c('log_mibps_stalled'))} with one stalled.`);
  }
  return L.join(' ');
}

function attachPaced() {
  const wl = 'attach_paced';
  const side = (rt) => {
    if (med(wl, 'dropped_all', rt) == null) return null;
    return `${rt}: each client ${mibps(med(wl, 'client_mibps_all', rt))} with all reading, ` +
      `${mibps(med(wl, 'client_mibps_stalled', rt))} with one stalled (keep ` +
      `${fmtCell(cell({ wl, m: 'clients_kept_pct' }, rt))} %), the log ` +
      `${mibps(med(wl, 'log_mibps_all', rt))} and ${mibps(med(wl, 'log_mibps_stalled', rt))} ` +
      `(keeps ${fmtCell(cell({ wl, m: 'log_kept_pct' }, rt))} %), reading clients dropped ` +
      `${count(med(wl, 'dropped_all', rt))} and ${count(med(wl, 'dropped_stalled', rt))}.`;
  };
  const sides = ['sluice', 'containerd'].map(side).filter(Boolean);
  if (!sides.length) return null;
  return [`**7b, paced.** The container writes ${C.attach_rate_mibps} MiB/s (--attach-rate; ` +
    'the log rate with no client is what it really wrote, plus the log\'s line prefixes), which a ' +
    'reading client can follow, so only the stalled client falls behind. By design sluice ends ' +
    'that one session and lets the rest run on; containerd holds up the container for it. ' +
    'What happened (medians):',
  ...sides,
  'The stalled client reads nothing: its pipe (one page) is full before the window and takes ' +
    'no byte during it (the notes give both fills), and its client then stops reading the ' +
    'socket, so it does not see its own end either.'].join(' ');
}

function attachText() {
  return [attachFull(), attachPaced()].filter(Boolean).join('\n\n');
}

const md = [
  machineText(), '', table(), '',
  misses().length ? `Targets missed:\n${misses().join('\n')}`
    : evaluated.some((r) => r.met != null) ? 'Every measured target met.' : 'No target measured.', '',
  ...(attachText() ? [attachText(), ''] : []),
  'Negotiated protocols and notes:', notesText(),
].join('\n');

// ---- chart ----------------------------------------------------------------

function chartFiles() {
  const lines = ['# label sluice containerd tcp'];
  for (const r of evaluated) {
    if (r.sec || r.unit !== 'MiB/s' || !r.limit) continue;
    const v = (c) => (c?.v != null ? c.v.toFixed(1) : 'NaN');
    const label = `${r.wl.replace('exec_', '')} ${r.label.replace('throughput, ', '')}`;
    lines.push(`"${label.replace(/"/g, '')}" ${v(r.sluice)} ${v(r.containerd)} ${v(r.tcp)}`);
  }
  fs.rmSync(path.join(outDir, 'chart.gp'), { force: true });
  if (!lines.some((l) => /^".*" .*\d/.test(l.replace(/NaN/g, '')))) return; // nothing measured
  fs.writeFileSync(path.join(outDir, 'chart.dat'), lines.join('\n') + '\n');
  const png = path.join(outDir, 'results.png');
  const dat = path.join(outDir, 'chart.dat');
  fs.writeFileSync(path.join(outDir, 'chart.gp'), [
    `set terminal pngcairo size 1400,700 font 'sans,10'`,
    `set output '${png}'`,
    `set title 'sluice vs containerd 1.6: throughput (median of runs), log scale'`,
    `set style data histograms`, `set style histogram clustered gap 1`,
    `set style fill solid 0.8 border -1`, `set boxwidth 0.9`,
    `set logscale y`, `set ylabel 'MiB/s'`, `set grid ytics`,
    `set xtics rotate by -30 left`, `set key top right`, `set bmargin 9`,
    `plot '${dat}' using 2:xtic(1) title 'sluice', '' using 3 title 'containerd', '' using 4 title 'loopback TCP (limit)'`,
    '',
  ].join('\n'));
}

// ---- output -----------------------------------------------------------------

fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'results.md'), `${md}\n`);
const summary = evaluated.filter((r) => !r.sec).map((r) => ({
  workload: r.wl, metric: r.m, side: r.side || 'sluice', label: r.label, unit: r.unit, aggregate: r.agg,
  sluice: r.sluice, containerd: r.containerd, tcp: r.tcp, pipe: r.pipe,
  sluice_over_containerd: r.ratio ?? null, sluice_over_tcp: r.ratioLimit ?? null,
  target: r.target ? targetText(r.target) : null, met: r.met ?? null,
}));
fs.writeFileSync(path.join(outDir, 'results.json'), JSON.stringify({
  machine: raw.machine, runtimes: raw.runtimes, config: raw.config, duration_s: raw.duration_s,
  rows: summary, info: raw.info, errors: raw.errors, samples: raw.samples,
}, null, 1) + '\n');
chartFiles();
if (readmePath) {
  const text = fs.readFileSync(readmePath, 'utf8');
  const a = text.indexOf(MARK_BEGIN), b = text.indexOf(MARK_END);
  if (a < 0 || b < a) {
    console.error(`report: no ${MARK_BEGIN} … ${MARK_END} in ${readmePath}`);
    process.exit(1);
  }
  fs.writeFileSync(readmePath,
    `${text.slice(0, a + MARK_BEGIN.length)}\n${md}\n${text.slice(b)}`);
}
console.log(md);
