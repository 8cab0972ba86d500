// `meson install` as a packager runs it (--destdir): the tree holds exactly
// the programs, man pages, configuration files, systemd unit, headers,
// shared library (soname, exports) and sluice.pc it should; each man page
// renders with man(1); the unit passes `systemd-analyze verify` with the
// properties that keep pods alive across a restart; and the installed
// sluiced, on the installed config file, finds the installed sluice-mon for
// a pod and answers the installed sluicectl reading the installed endpoint
// file. The build is the one $SLUICED comes from. Needs root, runc, meson,
// lowdown (man pages) and systemd (systemd-analyze).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri } from './lib/cri.mjs';
import { SLUICED, SluicedProc, monitorsUnder, skipReason, sleep } from './lib/sluiced.mjs';

const BUILD = path.resolve(path.dirname(SLUICED), '../..');
const need = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const skip = skipReason() ||
  (!fs.existsSync(path.join(BUILD, 'build.ninja')) && `no meson build dir at ${BUILD}`) ||
  (!need('systemd-analyze') && 'systemd-analyze is missing (apt-get install systemd)') ||
  (!need('lowdown') && 'lowdown is missing (apt-get install lowdown): no man pages') ||
  (!need('man') && 'man is missing (apt-get install man-db)');

const PROGRAMS = ['sluiced', 'sluice-mon', 'sluicectl', 'sluice-kube'];
const MANS = { 'sluiced.8': 'man8', 'sluice-mon.8': 'man8', 'sluice-kube.8': 'man8',
  'sluicectl.1': 'man1', 'sluiced.json.5': 'man5' };
const HEADERS = ['client.h', 'common.h', 'error.h', 'limits.h', 'runtime.h', 'server.h',
  'version.h'];

function opts() {
  const r = spawnSync('meson', ['introspect', BUILD, '--buildoptions'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return Object.fromEntries(JSON.parse(r.stdout).map((o) => [o.name, o.value]));
}

let version;
function projectVersion() {
  if (version) return version;
  const r = spawnSync('meson', ['introspect', BUILD, '--projectinfo'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  version = JSON.parse(r.stdout).version;
  return version;
}

function walk(dir, out = []) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

describe('meson install', { skip }, () => {
  let root, dest, o, prefix;
  const at = (...p) => path.join(dest, ...p);

  before(() => {
    root = fs.mkdtempSync('/tmp/sd-inst-');
    dest = path.join(root, 'dest');
    const r = spawnSync('meson', ['install', '-C', BUILD, '--no-rebuild', '--destdir', dest],
      { encoding: 'utf8' });
    assert.equal(r.status, 0, `meson install: ${r.stdout}\n${r.stderr}`);
    o = opts();
    prefix = o.prefix;
  });

  // the shared library with its soname link and dev link, and sluice.pc
  const libFiles = () => [`libsluice.so.${projectVersion()}`, 'libsluice.so.2', 'libsluice.so',
    'pkgconfig/sluice.pc'].map((f) => at(prefix, o.libdir, f));

  after(() => {
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  test('the tree: programs, man pages, /etc files, the unit, headers, library; no test tools', () => {
    const want = new Set([
      ...PROGRAMS.map((p) => at(prefix, o.bindir, p)),
      ...Object.entries(MANS).map(([f, d]) => at(prefix, o.mandir, d, f)),
      at('/etc/sluice/sluiced.json'), at('/etc/sluicectl.yaml'),
      at(prefix, 'lib/systemd/system/sluiced.service'),
      ...HEADERS.map((h) => at(prefix, o.includedir, 'sluice', h)),
      ...libFiles(),
    ]);
    assert.deepEqual(walk(dest).sort(), [...want].sort());
    for (const p of PROGRAMS)
      assert.ok(fs.statSync(at(prefix, o.bindir, p)).mode & 0o111, `${p} is executable`);
    // sluiced reads the installed file by default (--help names it)
    const help = spawnSync(at(prefix, o.bindir, 'sluiced'), ['--help'], { encoding: 'utf8' });
    assert.match(help.stdout, /default: \/etc\/sluice\/sluiced\.json when it exists/);
  });

  test('libsluice.so.2: soname, exactly the public symbols, sluice.pc and version.h agree', () => {
    const v = projectVersion();
    const lib = at(prefix, o.libdir, `libsluice.so.${v}`);
    assert.equal(fs.readlinkSync(at(prefix, o.libdir, 'libsluice.so.2')), `libsluice.so.${v}`);
    assert.equal(fs.readlinkSync(at(prefix, o.libdir, 'libsluice.so')), 'libsluice.so.2');
    const dyn = spawnSync('readelf', ['-d', lib], { encoding: 'utf8' }).stdout;
    assert.match(dyn, /\(SONAME\) +Library soname: \[libsluice\.so\.2\]/);
    // every defined dynamic symbol is an SL_EXPORT declaration of the installed headers
    const declared = new Set(HEADERS.flatMap((h) =>
      [...fs.readFileSync(at(prefix, o.includedir, 'sluice', h), 'utf8')
        .matchAll(/^SL_EXPORT [^(]*?\b(sl_[a-z_0-9]+)\(/gm)].map((m) => m[1])));
    const nm = spawnSync('nm', ['-D', '--defined-only', lib], { encoding: 'utf8' });
    assert.equal(nm.status, 0, nm.stderr);
    const exported = nm.stdout.split('\n').filter((l) => l && !/ A /.test(l))
      .map((l) => l.split(' ')[2].replace(/@.*/, ''));
    assert.deepEqual(exported.sort(), [...declared].sort());
    assert.ok(exported.includes('sl_version') && exported.includes('sl_server_new'), exported.join(' '));
    const pc = fs.readFileSync(at(prefix, o.libdir, 'pkgconfig/sluice.pc'), 'utf8');
    assert.match(pc, new RegExp(`^Version: ${v.replace(/\./g, '\\.')}$`, 'm'));
    assert.match(pc, /^Requires: libuv/m);
    assert.match(pc, /^Libs: -L\$\{libdir\} -lsluice$/m);
    const vh = fs.readFileSync(at(prefix, o.includedir, 'sluice/version.h'), 'utf8');
    assert.match(vh, new RegExp(`#define SLUICE_VERSION "${v.replace(/\./g, '\\.')}"`));
  });

  test('each man page renders with man(1), NAME first; sluiced(8) lists every flag of --help', () => {
    for (const [f, d] of Object.entries(MANS)) {
      const r = spawnSync('man', ['-l', at(prefix, o.mandir, d, f)],
        { encoding: 'utf8', env: { ...process.env, MANWIDTH: '100', MAN_KEEP_STDERR: '1' } });
      assert.equal(r.status, 0, `${f}: ${r.stderr}`);
      // troff's "cannot adjust line" (a wide table cell) is layout, not an error
      const warnings = r.stderr.split('\n').filter((l) => l && !/: cannot adjust line$/.test(l));
      assert.deepEqual(warnings, [], `${f}: warnings`);
      const name = f.replace(/\.\d$/, '');
      assert.match(r.stdout, new RegExp(`^NAME\\n +${name.replace('.', '\\.')} — `, 'm'), f);
      assert.doesNotMatch(r.stdout, /<!--/, `${f}: an unreplaced placeholder`);
    }
    const help = spawnSync(at(prefix, o.bindir, 'sluiced'), ['--help'], { encoding: 'utf8' }).stdout;
    const flags = [...help.matchAll(/^ {2}(--[a-z-]+) [A-Z[]/gm)].map((m) => m[1]);
    assert.ok(flags.length > 30, `flags in --help: ${flags.length}`);
    const man8 = spawnSync('man', ['-l', at(prefix, o.mandir, 'man8/sluiced.8')],
      { encoding: 'utf8', env: { ...process.env, MANWIDTH: '200' } }).stdout;
    const json5 = spawnSync('man', ['-l', at(prefix, o.mandir, 'man5/sluiced.json.5')],
      { encoding: 'utf8', env: { ...process.env, MANWIDTH: '200' } }).stdout;
    assert.match(man8, /usage_nano_cores/, 'help text reaches the page verbatim');
    for (const f of flags) {
      assert.match(man8, new RegExp(`^ +${f} `, 'm'), `sluiced(8) lacks ${f}`);
      if (f === '--config') continue; // the file's name, not one of its keys
      assert.match(json5, new RegExp(`^ +${f.slice(2)} \\((string|integer)\\)`, 'm'),
        `sluiced.json(5) lacks ${f.slice(2)}`);
    }
  });

  test('sluiced.service passes systemd-analyze verify; Type=notify, KillMode=mixed, Delegate=yes', () => {
    const unit = fs.readFileSync(at(prefix, 'lib/systemd/system/sluiced.service'), 'utf8');
    const props = Object.fromEntries(unit.split('\n').filter((l) => /^[A-Za-z]+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    assert.equal(props.Type, 'notify');
    assert.equal(props.KillMode, 'mixed');
    assert.equal(props.Delegate, 'yes');
    assert.equal(props.ExecStart, path.join(prefix, o.bindir, 'sluiced'));
    assert.equal(props.ExecReload, '/bin/kill -HUP $MAINPID');
    // verify needs the program where the unit names it: a copy pointing
    // into the destdir; Documentation= is checked against the installed pages
    const verify = (text) => {
      const dir = fs.mkdtempSync(path.join(root, 'unit-'));
      fs.writeFileSync(path.join(dir, 'sluiced.service'),
        text.replace(`ExecStart=${props.ExecStart}`, `ExecStart=${at(props.ExecStart)}`));
      return spawnSync('systemd-analyze', ['verify', path.join(dir, 'sluiced.service')],
        { encoding: 'utf8', env: { ...process.env, MANPATH: at(prefix, o.mandir) } });
    };
    const r = verify(unit);
    assert.deepEqual([r.status, r.stderr], [0, '']);
    // the same check on a broken copy complains (so an empty stderr means something)
    const bad = verify(unit.replace('KillMode=mixed', 'KillMode=gently'));
    assert.match(bad.stderr, /kill mode specification, ignoring: gently/);
  });

  test('the installed sluiced on the installed config runs a pod with the installed sluice-mon; the installed sluicectl reads the installed endpoint file', async () => {
    const run = path.join(root, 'run');
    const state = path.join(root, 'state');
    const sock = path.join(run, 'sluice.sock');
    const proc = new SluicedProc(spawn(at(prefix, o.bindir, 'sluiced'), [
      '--config', at('/etc/sluice/sluiced.json'), '--listen', `unix://${sock}`,
      '--state-dir', state, '--run-dir', run, '--stream-port', '0',
      '--admin-listen', '127.0.0.1:0', '--monitor-cgroup', '',
    ], { stdio: ['ignore', 'pipe', 'pipe'] }), root);
    let cri;
    try {
      await proc.waitBanner();
      // the log line follows the banner on another pipe
      for (let i = 0; i < 250 && !/msg="sluiced ready"/.test(proc.stderr); i++) await sleep(20);
      assert.match(proc.stderr, new RegExp(`msg="sluiced ready" .*config=${at('/etc/sluice/sluiced.json')}`));
      cri = await connectCri(`unix://${sock}`);
      const pod = await cri.runtime.RunPodSandbox({ config: {
        metadata: { name: 'inst', uid: 'inst-uid', namespace: 'sluice-test', attempt: 0 },
        log_directory: path.join(root, 'logs'),
        linux: { security_context: { namespace_options: { network: 'NODE' } } },
      } });
      const [mon] = monitorsUnder(root);
      assert.equal(fs.readlinkSync(`/proc/${mon}/exe`), at(prefix, o.bindir, 'sluice-mon'));
      const ctl = spawnSync(at(prefix, o.bindir, 'sluicectl'),
        ['-c', at('/etc/sluicectl.yaml'), '-r', `unix://${sock}`, '-D', 'pods', '-q'],
        { encoding: 'utf8' });
      assert.equal(ctl.status, 0, ctl.stderr);
      assert.equal(ctl.stdout.trim(), pod.pod_sandbox_id);
      assert.match(ctl.stderr, new RegExp(`config file ${at('/etc/sluicectl.yaml')} read`));
      await cri.runtime.StopPodSandbox({ pod_sandbox_id: pod.pod_sandbox_id });
      await cri.runtime.RemovePodSandbox({ pod_sandbox_id: pod.pod_sandbox_id });
    } finally {
      cri?.close();
      const problems = await proc.terminate();
      for (const pid of monitorsUnder(root)) process.kill(pid, 'SIGKILL');
      assert.deepEqual(problems, [], proc.describe());
    }
  });
});
