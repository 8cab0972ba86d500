// libsluice embedded from outside (issue 15): `meson install` into a
// DESTDIR under a temp dir, examples/exec-server.c compiled there with cc
// and nothing but `pkg-config --cflags --libs sluice` (the tree's own
// headers and libraries are not on its command line), then driven by an
// independent client: the `ws` package runs an exec over the v5 WebSocket
// protocol (stdin, stdout, stderr, exit code in the status) and a legacy
// WebSocket port-forward to a local echo server. The build is the one
// $SLUICED comes from; a sanitizer build compiles the example with the same
// -fsanitize flags (the installed library needs their runtime).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { CH, V4, V5, connect, failureJson, SUCCESS_JSON } from './lib/session.mjs';
import { SLUICED } from './lib/sluiced.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BUILD = path.resolve(path.dirname(SLUICED), '../..');
const need = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const skip = (!fs.existsSync(path.join(BUILD, 'build.ninja')) && `no meson build dir at ${BUILD}`) ||
  (!need('pkg-config') && 'pkg-config is missing (apt-get install pkgconf)') ||
  (!need('cc') && 'cc is missing (apt-get install gcc)');

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', ...opts });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
  return r.stdout.trim();
}

// Lines of the example's stdout, one answer per request.
class Example {
  constructor(proc) {
    this.proc = proc;
    this.out = '';
    this.err = '';
    this.waiters = [];
    proc.stdout.on('data', (d) => { this.out += d; this.waiters.forEach((w) => w()); });
    proc.stderr.on('data', (d) => { this.err += d; });
    this.exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  }

  nextLine(timeoutMs = 20000) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line; stderr: ${this.err}`)), timeoutMs);
      const check = () => {
        const nl = this.out.indexOf('\n');
        if (nl < 0) return;
        const line = this.out.slice(0, nl);
        this.out = this.out.slice(nl + 1);
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
        resolve(line);
      };
      this.waiters.push(check);
      check();
    });
  }

  async ask(line) {
    this.proc.stdin.write(`${line}\n`);
    return this.nextLine();
  }
}

describe('libsluice embedded: the installed tree, pkg-config, examples/exec-server.c', { skip }, () => {
  let root, dest, libdir, ex;

  before(async () => {
    root = fs.mkdtempSync('/tmp/sl-embed-');
    dest = path.join(root, 'dest');
    run('meson', ['install', '-C', BUILD, '--no-rebuild', '--destdir', dest]);
    const o = Object.fromEntries(JSON.parse(run('meson', ['introspect', BUILD, '--buildoptions']))
      .map((x) => [x.name, x.value]));
    libdir = path.join(dest, o.prefix, o.libdir);
    const env = { ...process.env, PKG_CONFIG_PATH: path.join(libdir, 'pkgconfig'),
      PKG_CONFIG_SYSROOT_DIR: dest };
    const flags = run('pkg-config', ['--cflags', '--libs', 'sluice'], { env }).split(/\s+/);
    assert.deepEqual(flags.filter((f) => f.includes(REPO)), [], 'flags naming the source tree');
    assert.ok(flags.includes(`-L${libdir}`) && flags.includes('-lsluice'), flags.join(' '));
    assert.ok(flags.some((f) => f.startsWith(`-I${dest}`)), flags.join(' '));
    const san = o.b_sanitize && o.b_sanitize !== 'none' ? [`-fsanitize=${o.b_sanitize}`] : [];
    const exe = path.join(root, 'exec-server');
    run('cc', ['-std=c17', '-Wall', '-Wextra', '-Werror', ...san, '-o', exe,
      path.join(REPO, 'examples/exec-server.c'), ...flags]);
    ex = new Example(spawn(exe, [], { stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, LD_LIBRARY_PATH: libdir } }));
    const banner = await ex.nextLine();
    assert.match(banner, /^exec-server (\d+\.\d+\.\d+) \(libsluice \1\) on http:\/\/127\.0\.0\.1:\d+\/$/);
  });

  after(async () => {
    if (ex) {
      ex.proc.stdin.end();
      const end = await ex.exited;
      assert.deepEqual(end, { code: 0, signal: null }, `exec-server stderr: ${ex.err}`);
      assert.doesNotMatch(ex.err, /Sanitizer|runtime error/);
    }
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  test('the example runs against the installed libsluice.so.2 (ldd)', () => {
    const ldd = run('ldd', [path.join(root, 'exec-server')], { env: { ...process.env, LD_LIBRARY_PATH: libdir } });
    assert.match(ldd, new RegExp(`libsluice\\.so\\.2 => ${libdir.replace(/[.+]/g, '\\$&')}/libsluice\\.so\\.2 `));
  });

  test('exec over v5: stdin in, stdout and stderr out, exit code 7 in the status', async () => {
    const url = await ex.ask('exec\tsh\t-c\tread x; echo "out:$x"; echo err >&2; exit 7');
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/exec\//);
    const s = await connect(url.replace(/^http/, 'ws'), { protocols: [V5] });
    assert.equal(s.protocol, V5);
    s.send(CH.STDIN, 'hello\n');
    s.sendClose(CH.STDIN);
    await s.waitClosed();
    assert.equal(s.text(CH.STDOUT), 'out:hello\n');
    assert.equal(s.text(CH.STDERR), 'err\n');
    assert.equal(s.text(CH.ERROR), failureJson(7));
  });

  test('exec of true: Success; a missing binary: the failure names why', async () => {
    const ok = await connect((await ex.ask('exec true')).replace(/^http/, 'ws'), { protocols: [V5] });
    ok.sendClose(CH.STDIN);
    await ok.waitClosed();
    assert.equal(ok.text(CH.ERROR), SUCCESS_JSON);
    const bad = await connect((await ex.ask('exec /nonexistent/x')).replace(/^http/, 'ws'),
      { protocols: [V5] });
    await bad.waitClosed();
    assert.match(bad.text(CH.ERROR), /"status":"Failure".*no such file or directory/i);
  });

  test('port-forward over the legacy WebSocket protocol reaches a local echo server', async () => {
    const echo = net.createServer((c) => c.on('data', (d) => c.write(d.toString().toUpperCase())));
    await new Promise((r) => echo.listen(0, '127.0.0.1', r));
    try {
      const port = echo.address().port;
      const url = await ex.ask(`portforward ${port}`);
      const s = await connect(url.replace(/^http/, 'ws'), { protocols: [V4] });
      const le = Buffer.from([port & 0xff, port >> 8]);
      // each channel opens with the port (little-endian), then data
      await s.waitFor((x) => x.channel(0).length >= 2 && x.channel(1).length >= 2, 'port frames');
      assert.deepEqual(s.channel(0).subarray(0, 2), le);
      s.send(0, 'ping');
      await s.waitFor((x) => x.channel(0).length >= 6, 'the echo');
      assert.equal(s.channel(0).subarray(2).toString(), 'PING');
      s.ws.close();
      await s.waitClosed();
    } finally {
      echo.close();
    }
  });
});
