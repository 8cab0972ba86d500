// sluice-mon with the real runc and busybox bundles (docs/mon-protocol.md):
// lifecycle and exit records, CRI logs (protocol notes §11), tty, attach
// with stdin_once (§5.5), exec with an initial terminal size, the attach
// backlog bound, surviving the death of its parent, shutdown.
// Skips when not root, or without runc or busybox-static.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  MON, Mon, makeBundle, makeRootfs, parseCriLog, pidAlive, skipReason, waitFor,
} from './lib/mon.mjs';

const reason = skipReason();
const LOOP = 'i=0; while [ $i -lt 1000 ]; do echo line $i; i=$((i+1)); done; exit 7';
// 48 bursts of 250000 bytes: the writer never waits for anyone, and a
// reader that keeps within the backlog of it (the fast one) sees every byte.
const BURST = 250000;
const FAST_BYTES = 48 * BURST;
const FAST = 'read x; i=0; while [ $i -lt 48 ]; do ' +
  `yes 0123456789012345678901234567890123456789 | head -c ${BURST}; sleep 0.03; i=$((i+1)); ` +
  'done; echo END';

describe('sluice-mon with runc', { skip: reason ?? false }, () => {
  let tmp, rootfs, mon;
  const logPath = (id) => path.join(tmp, 'logs', `${id}.log`);
  const bundle = (id, args, opts) => makeBundle(path.join(tmp, `b-${id}`), rootfs, args, opts);
  const readLog = (id) => parseCriLog(fs.readFileSync(logPath(id), 'utf8'));

  // create + start; resolves with the client (replies, events so far).
  async function run(id, args, opts = {}, waitExit = false) {
    const b = bundle(id, args, { terminal: !!opts.tty });
    return mon.call([
      { type: 'create', container_id: id, bundle: b, log_path: logPath(id), ...opts },
      { type: 'start', container_id: id },
    ], waitExit ? { waitEvent: 'exited', match: `container_id=${id}` } : {});
  }

  const exitedState = (id) => waitFor(() => mon.statusOf(id).state === 'exited', `${id} exited`);

  before(() => {
    tmp = fs.mkdtempSync('/tmp/slmon-');
    rootfs = makeRootfs(path.join(tmp, 'rootfs'));
    mon = new Mon(path.join(tmp, 'p1'), 'p1').start();
  });

  after(() => {
    mon?.kill();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('the starter exits 0 with the pid; the monitor listens, 0600, mon.pid matches', async () => {
    assert.ok(mon.alive(), `monitor ${mon.pid} runs`);
    const st = fs.statSync(mon.sock);
    assert.ok(st.isSocket());
    assert.equal(st.mode & 0o777, 0o600);
    assert.equal(Number(fs.readFileSync(path.join(mon.runDir, 'mon.pid'), 'utf8')), mon.pid);
    // detached: a session of its own, led by its parent, the pod's reaper
    const stat = fs.readFileSync(`/proc/${mon.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    const [ppid, sid] = [Number(stat[1]), Number(stat[3])];
    assert.equal(sid, ppid, 'the session is its parent\'s');
    assert.notEqual(sid, Number(fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[3]));
    assert.deepEqual(fs.readFileSync(`/proc/${ppid}/cmdline`, 'utf8').split('\0').slice(0, 3),
      ['sluice-reaper', mon.runDir, String(mon.pid)]);
    // It names itself first thing in main, but the starter does not wait for
    // that: until then the kernel's name is the exec'd file's, "exe".
    let comm;
    for (let i = 0; i < 100; i++) {
      comm = fs.readFileSync(`/proc/${ppid}/comm`, 'utf8');
      if (comm !== 'exe\n') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(comm, 'sluice-reaper\n');
  });

  test('1000-line container: 1000 F records in the CRI log, exit 7 in the event and status.json',
    async () => {
      const c = await run('loop', ['sh', '-c', LOOP], {}, true);
      const [create, start] = c.replies().slice(1);
      assert.equal(create.ok, true);
      assert.equal(start.ok, true);
      const ev = c.events('exited')[0];
      assert.equal(ev.exit_code, 7);
      assert.equal(ev.reason, '');
      const recs = readLog('loop');
      assert.equal(recs.length, 1000);
      recs.forEach((r, i) => {
        assert.deepEqual([r.stream, r.tag, r.content], ['stdout', 'F', `line ${i}`]);
      });
      const st = mon.statusOf('loop');
      assert.equal(st.state, 'exited');
      assert.equal(st.exit_code, 7);
      assert.equal(st.finished_at, ev.finished_at);
      assert.equal(st.started_at, start.started_at);
      assert.ok(st.created_at > 1.6e18 && st.created_at <= st.started_at);
      assert.ok(st.started_at <= st.finished_at);
    });

  test('create errors are replies: a missing bundle, a duplicate id, a bad id',
    async () => {
      const bad = path.join(tmp, 'no-such-bundle');
      const c = await mon.call([
        { type: 'create', container_id: 'bad', bundle: bad, log_path: logPath('bad') },
      ], { allowFail: true });
      assert.equal(c.exit.code, 1);
      assert.equal(c.replies()[1].ok, false);
      assert.equal(c.replies()[1].error,
        `create bad: bundle ${bad}/config.json: No such file or directory`);
      const dup = await mon.call([{ type: 'create', container_id: 'loop', bundle: bad }],
        { allowFail: true });
      assert.equal(dup.replies()[1].error, 'container exists');
      const id = await mon.call([{ type: 'create', container_id: '../x', bundle: bad }],
        { allowFail: true });
      assert.equal(id.replies()[1].error, 'invalid container_id');
      const hello = await mon.call([]);
      assert.deepEqual(hello.replies()[0].containers.map((x) => x.id), ['loop']);
    });

  test('bad requests get ok:false; a malformed packet gets id:null and ends only its ' +
    'connection', async () => {
    const err = async (reqs, opts = {}) => {
      const c = await mon.call(reqs, { allowFail: true, ...opts });
      assert.equal(c.exit.code, 1, JSON.stringify(c.messages));
      return c.replies().at(-1);
    };
    assert.equal((await err([{ type: 'start', container_id: 'loop' }], { noHello: true })).error,
      'the first request must be hello');
    assert.match((await err([{ type: 'frobnicate' }])).error, /unknown request type/);
    assert.match((await err([{ type: 'stop', container_id: 'loop', timeout: 'soon' }])).error,
      /timeout must be/);
    assert.match((await err([{ type: 'hello', version: 2 }])).error, /unsupported protocol/);
    assert.equal((await err([{ type: 'start', id: 'x' }])).error,
      'request without a numeric id');
    assert.match((await err([{ type: 'exec', exec_id: 'e', container_id: 'loop', cmd: [] }]))
      .error, /cmd must be a non-empty array/);
    const adopt = { type: 'adopt', container_id: 'a1', bundle: '/nowhere', pid: 5, start: '1' };
    assert.match((await err([{ ...adopt, pid: 0 }])).error, /^adopt: pid must be a process id/);
    assert.match((await err([{ ...adopt, start: 'soon' }])).error, /^adopt: start must be/);
    assert.match((await err([{ ...adopt, bundle: 'rel' }])).error, /bundle must be an absolute/);
    assert.equal((await err([{ ...adopt, container_id: 'loop' }])).error,
      'adopt: container exists');
    assert.equal((await err([{ type: 'stdio', container_id: 'nope' }])).error,
      'no such container');
    assert.equal((await err([{ type: 'stdio', container_id: 'loop' }])).error,
      'container loop has no open output', 'exited: its output ended');
    for (const raw of ['not json', '{"id":1}', '{"type":"hello","type":"x"}', '[1]']) {
      const r = await err([raw], { raw: true });
      assert.deepEqual([r.id, r.ok], [null, false], raw);
    }
    assert.ok(mon.alive());
    const hello = await mon.call([]);
    assert.equal(hello.replies()[0].pod_id, 'p1');
  });

  test('tty container: attach, resize by session, output in the log without \\r', async () => {
    await run('tty', ['sh', '-c', 'read x; stty size; echo done-$x'], { tty: true, stdin: true });
    const a = mon.client([{ type: 'attach', container_id: 'tty', session: 's-tty', stdin: true,
      stdout: true }], { relay: true });
    await a.until((x) => x.replies().length === 2, 'attach reply');
    assert.deepEqual(a.replies()[1].fds, ['stdin', 'stdout']);
    await mon.call([{ type: 'resize', session: 's-tty', width: 90, height: 20 }]);
    a.write('go\n');
    await a.until((x) => x.exit, 'attach ends with the container', 15000);
    a.end();
    const out = a.stdout().toString();
    assert.match(out, /20 90\r\n/);
    assert.match(out, /done-go\r\n/);
    await exitedState('tty');
    const recs = readLog('tty');
    assert.ok(recs.every((r) => r.stream === 'stdout' && !r.content.endsWith('\r')));
    assert.ok(recs.some((r) => r.tag === 'F' && r.content === '20 90'), JSON.stringify(recs));
    assert.ok(recs.some((r) => r.tag === 'F' && r.content === 'done-go'));
  });

  test('attach to cat: stdin reaches it, output comes back; stdin_once closes its stdin',
    async () => {
      await run('cat', ['cat'], { stdin: true, stdin_once: true });
      const a = mon.client([{ type: 'attach', container_id: 'cat', session: 's-cat', stdin: true,
        stdout: true, stderr: true }], { relay: true });
      await a.until((x) => x.replies().length === 2, 'attach reply');
      assert.deepEqual(a.replies()[1].fds, ['stdin', 'stdout', 'stderr']);
      a.write('hello cat\n');
      await a.until((x) => x.stdout().toString() === 'hello cat\n', 'echo from cat');
      a.end(); // the session's stdin ends: stdin_once closes cat's stdin, cat exits
      const res = await a.done;
      assert.equal(res.code, 0);
      await exitedState('cat');
      assert.equal(mon.statusOf('cat').exit_code, 0);
      assert.deepEqual(readLog('cat').map((r) => [r.stream, r.tag, r.content]),
        [['stdout', 'F', 'hello cat']]);
    });

  test('a command runc cannot start: create ok, start fails with runc\'s reason, the ' +
    'record says exited 128 StartError; stop and remove are fine', async () => {
    const c = await mon.call([
      { type: 'create', container_id: 'nocmd', bundle: bundle('nocmd', ['no-such-command', 'x']),
        log_path: logPath('nocmd') },
      { type: 'start', container_id: 'nocmd' },
    ], { allowFail: true });
    assert.deepEqual(c.replies().slice(1).map((r) => r.ok), [true, false]);
    const st0 = mon.statusOf('nocmd');
    assert.equal(st0.state, 'exited', JSON.stringify(st0));
    assert.equal(st0.exit_code, 128);
    assert.equal(st0.reason, 'StartError');
    assert.equal(st0.message, 'runc create failed: unable to start container process: ' +
      'exec: "no-such-command": executable file not found in $PATH');
    assert.equal(st0.started_at, 0);
    assert.ok(st0.finished_at >= st0.created_at && st0.created_at > 1.6e18);
    // A second one, step by step: created, a stop that has nothing to stop,
    // then the start (its reply and the exited event) and the remove.
    const b = bundle('nocmd2', ['/bin/nope'], { terminal: true });
    const x = await mon.call([
      { type: 'create', container_id: 'nocmd2', bundle: b, log_path: logPath('nocmd2'), tty: true },
      { type: 'stop', container_id: 'nocmd2', timeout: 0 },
    ]);
    assert.deepEqual(x.replies().slice(1).map((r) => r.ok), [true, true]);
    assert.equal(mon.statusOf('nocmd2').state, 'created');
    const y = await mon.call([{ type: 'start', container_id: 'nocmd2' }],
      { allowFail: true, waitEvent: 'exited', match: 'container_id=nocmd2' });
    assert.equal(y.replies()[1].ok, false);
    assert.equal(y.replies()[1].error, 'runc create failed: unable to start container process: ' +
      'exec: "/bin/nope": stat /bin/nope: no such file or directory');
    const ev = y.events('exited')[0];
    assert.deepEqual([ev.exit_code, ev.reason, ev.message],
      [128, 'StartError', y.replies()[1].error]);
    await mon.call([{ type: 'remove', container_id: 'nocmd' },
      { type: 'remove', container_id: 'nocmd2' }]);
    const hello = await mon.call([]);
    assert.ok(!hello.replies()[0].containers.some((k) => k.id.startsWith('nocmd')));
    assert.ok(!fs.existsSync(path.join(mon.stateDir, 'containers/nocmd2/status.json')));
    assert.equal(spawnSync('runc', ['--root', path.join(mon.runDir, 'runc'), 'state', 'nocmd'])
      .status, 1, 'no runc state is left');
  });

  test('attach without stdin_once: the end of a client\'s stdin ends its session after the ' +
    'answer, never the container\'s stdin; the next client talks to the same shell', async () => {
    await run('sh', ['sh', '-c', 'n=0; while read l; do n=$((n+1)); echo "got:$l $n"; done; echo eof'],
      { stdin: true });
    const one = mon.client([{ type: 'attach', container_id: 'sh', session: 's-sh1', stdin: true,
      stdout: true }], { relay: true, waitEvent: 'attach_ended', match: 'session=s-sh1' });
    await one.until((x) => x.replies().length === 2, 'attach reply');
    one.write('one\n');
    one.end(); // EOF right behind the line: the answer still comes
    assert.equal((await one.done).code, 0);
    assert.match(one.stdout().toString(), /^got:one 1\n$/);
    assert.deepEqual(one.events('attach_ended'), [{ type: 'attach_ended', session: 's-sh1' }]);
    const two = mon.client([{ type: 'attach', container_id: 'sh', session: 's-sh2', stdin: true,
      stdout: true }], { relay: true, waitEvent: 'attach_ended', match: 'session=s-sh2' });
    await two.until((x) => x.replies().length === 2, 'attach reply');
    two.write('two\n');
    two.end();
    assert.equal((await two.done).code, 0);
    assert.equal(two.stdout().toString(), 'got:two 2\n', 'the same shell read both lines');
    assert.equal(mon.statusOf('sh').state, 'running');
    await mon.call([{ type: 'remove', container_id: 'sh' }]);
  });

  test('tty container with stdin_once: a tty attach that ends leaves the shell running ' +
    '(no ^D), a non-tty one closes its input', async () => {
    await run('ttyonce', ['sh'], { tty: true, stdin: true, stdin_once: true });
    const attach = async (session, tty, line) => {
      const a = mon.client([{ type: 'attach', container_id: 'ttyonce', session, tty, stdin: true,
        stdout: true }], { relay: true });
      await a.until((x) => x.replies().length === 2, 'attach reply');
      a.write(line);
      a.end();
      await a.done;
      return a.stdout().toString();
    };
    assert.match(await attach('t1', true, 'echo one-$((40+2))\n'), /one-42/);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(mon.statusOf('ttyonce').state, 'running', 'the first client\'s end left it');
    assert.match(await attach('t2', true, 'echo two-$((40+3))\n'), /two-43/);
    assert.equal(mon.statusOf('ttyonce').state, 'running');
    await attach('t3', false, '');
    await exitedState('ttyonce'); // ^D: the shell's input ended
    assert.equal(mon.statusOf('ttyonce').exit_code, 0);
  });

  test('reopen_log after rotation: new records go to the new file', async () => {
    await run('rot', ['cat'], { stdin: true });
    const a = mon.client([{ type: 'attach', container_id: 'rot', session: 's-rot', stdin: true,
      stdout: true }], { relay: true });
    await a.until((x) => x.replies().length === 2, 'attach reply');
    a.write('one\n');
    await a.until((x) => x.stdout().toString() === 'one\n', 'first echo');
    await waitFor(() => fs.readFileSync(logPath('rot'), 'utf8').includes(' F one'), 'first record');
    fs.renameSync(logPath('rot'), `${logPath('rot')}.1`);
    await mon.call([{ type: 'reopen_log', container_id: 'rot' }]);
    a.write('two\n');
    await a.until((x) => x.stdout().toString() === 'one\ntwo\n', 'second echo');
    await waitFor(() => fs.existsSync(logPath('rot')) &&
      fs.readFileSync(logPath('rot'), 'utf8').includes(' F two'), 'second record');
    assert.deepEqual(readLog('rot').map((r) => r.content), ['two']);
    assert.deepEqual(parseCriLog(fs.readFileSync(`${logPath('rot')}.1`, 'utf8'))
      .map((r) => r.content), ['one']);
    const rm = await mon.call([{ type: 'remove', container_id: 'rot' }]);
    assert.equal(rm.replies()[1].ok, true);
    assert.equal((await a.done).code, 0); // output EOF: the container is gone
    a.end();
  });

  describe('exec', () => {
    before(() => run('idle', ['sleep', '3600']));

    test('exec sh -c "echo hi; exit 3": output on its pipes, then exec_exited 3', async () => {
      const c = await mon.call([{ type: 'exec', exec_id: 'e1', container_id: 'idle',
        cmd: ['sh', '-c', 'echo hi; echo oops >&2; exit 3'], stdout: true, stderr: true }],
      { relay: true, waitEvent: 'exec_exited', match: 'exec_id=e1' });
      assert.deepEqual(c.replies()[1].fds, ['stdout', 'stderr']);
      assert.equal(c.stdout().toString(), 'hi\n');
      assert.equal(c.err, 'oops\n');
      assert.equal(c.events('exec_exited')[0].exit_code, 3);
    });

    test('exec with a tty and 100x30: stty size says "30 100" without any resize', async () => {
      const c = await mon.call([{ type: 'exec', exec_id: 'e2', container_id: 'idle',
        cmd: ['stty', 'size'], tty: true, stdout: true, width: 100, height: 30 }],
      { relay: true, waitEvent: 'exec_exited', match: 'exec_id=e2' });
      assert.deepEqual(c.replies()[1].fds, ['tty']);
      assert.equal(c.stdout().toString(), '30 100\r\n');
      assert.equal(c.events('exec_exited')[0].exit_code, 0);
    });

    test('kill_exec ends a running exec (137); unknown execs are fine', async () => {
      const x = mon.client([{ type: 'exec', exec_id: 'e3', container_id: 'idle',
        cmd: ['sleep', '3600'], stdout: true }],
      { relay: true, waitEvent: 'exec_exited', match: 'exec_id=e3' });
      await x.until((c) => c.replies().length === 2, 'exec reply');
      await new Promise((r) => setTimeout(r, 300)); // let the pid file appear
      await mon.call([{ type: 'kill_exec', exec_id: 'e3' }, { type: 'kill_exec', exec_id: 'nope' }]);
      await x.done;
      assert.equal(x.events('exec_exited')[0].exit_code, 137);
    });

    // The exec's scratch: runc exec gets a dir (exec/ID) that is gone once
    // the exec ended; the native path makes none (its starter's pid and
    // error travel in memfds), so exec/ is not touched at all (mtime).
    const execDir = () => path.join(mon.runDir, 'exec');
    const execDirState = () => (fs.existsSync(execDir())
      ? { entries: fs.readdirSync(execDir()), mtime: fs.statSync(execDir(), { bigint: true }).mtimeNs }
      : { entries: [], mtime: null });

    test('exec scratch: runc exec leaves no dir behind, the native path makes none', async () => {
      // runc spec's caps list ambient ones that are not inheritable: runc
      // only warns and runs the exec without them, and so does the native path
      const b = bundle('scr', ['sleep', '3600']);
      const cfg = JSON.parse(fs.readFileSync(path.join(b, 'config.json'), 'utf8'));
      assert.ok(cfg.process.capabilities.ambient.some(
        (c) => !(cfg.process.capabilities.inheritable || []).includes(c)), 'ambient ⊄ inheritable');
      await mon.call([{ type: 'create', container_id: 'scr', bundle: b, log_path: logPath('scr') },
        { type: 'start', container_id: 'scr' }]);
      const runc = await mon.call([{ type: 'exec', exec_id: 'r1', container_id: 'scr',
        cmd: ['true'], stdout: true }], { waitEvent: 'exec_exited', match: 'exec_id=r1' });
      assert.equal(runc.events('exec_exited')[0].exit_code, 0);
      // removed right after exec_exited went out
      await waitFor(() => execDirState().entries.length === 0, 'runc exec\'s dir removed');
      const before = execDirState();
      const x = mon.client([{ type: 'exec', exec_id: 'n1', container_id: 'scr', exec_mode: 'native',
        cmd: ['sleep', '3600'], stdout: true }],
      { relay: true, waitEvent: 'exec_exited', match: 'exec_id=n1' });
      await x.until((c) => c.replies().length === 2, 'native exec reply');
      assert.equal(x.replies()[1].ok, true, JSON.stringify(x.replies()[1]));
      assert.match(mon.log(), /exec n1 in scr: starter pid \d+/, 'the native path ran it');
      // its pid came through the memfd: kill_exec finds and kills it
      await mon.call([{ type: 'kill_exec', exec_id: 'n1' }]);
      await x.done;
      assert.equal(x.events('exec_exited')[0].exit_code, 137);
      // a start error through the log memfd: runc's kind of message
      const bad = await mon.call([{ type: 'exec', exec_id: 'n2', container_id: 'scr',
        exec_mode: 'native', cmd: ['/no/such'], stdout: true }], { allowFail: true });
      assert.equal(bad.replies()[1].ok, false);
      assert.match(bad.replies()[1].error,
        /OCI runtime exec failed: .*stat \/no\/such: no such file or directory$/);
      assert.deepEqual(execDirState(), before, 'the native path did not touch exec/');
      const rm = await mon.call([{ type: 'stop', container_id: 'scr', timeout: 0 },
        { type: 'remove', container_id: 'scr' }]);
      assert.equal(rm.replies()[2].ok, true);
    });

    // The monitor's open fds, once two readings 200 ms apart agree (a
    // closed control connection is released on the loop).
    const monFds = () => fs.readdirSync(`/proc/${mon.pid}/fd`).length;
    async function settledFds() {
      let prev = -1;
      for (let i = 0; i < 50; i++) {
        const n = monFds();
        if (n === prev) return n;
        prev = n;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error('the monitor\'s fd count did not settle');
    }

    // exec_mode native for a spec the native path does not cover (a
    // process.user key it does not apply: mon_nexec_plan.c) must go through
    // runc exec: its scratch dir exists while the exec runs, the log says
    // why, stdio and the exit code are the process's, and once it ended
    // neither the dir nor any fd of the monitor is left.
    test('native exec falls back to runc exec for a spec it does not cover; nothing is left',
      async () => {
        const b = bundle('fb', ['sleep', '3600']);
        const cfgPath = path.join(b, 'config.json');
        const cfg = JSON.parse(fs.readFileSync(cfgPath, 'utf8'));
        cfg.process.user.username = 'nobody'; // a Windows field: runc ignores it
        fs.writeFileSync(cfgPath, JSON.stringify(cfg, null, 1));
        await mon.call([{ type: 'create', container_id: 'fb', bundle: b, log_path: logPath('fb') },
          { type: 'start', container_id: 'fb' }]);
        await waitFor(() => execDirState().entries.length === 0, 'no exec dir left before');
        const fdsBefore = await settledFds();
        const x = mon.client([{ type: 'exec', exec_id: 'f1', container_id: 'fb',
          exec_mode: 'native', cmd: ['sh', '-c', 'read x; echo got-$x; echo err >&2; exit 5'],
          stdin: true, stdout: true, stderr: true }],
        { relay: true, waitEvent: 'exec_exited', match: 'exec_id=f1' });
        await x.until((c) => c.replies().length === 2, 'exec reply');
        assert.equal(x.replies()[1].ok, true, JSON.stringify(x.replies()[1]));
        assert.deepEqual(x.replies()[1].fds, ['stdin', 'stdout', 'stderr']);
        // it waits for its stdin: runc exec's scratch is there, the native path's never is
        assert.deepEqual(execDirState().entries, ['f1'], 'runc exec\'s dir exists');
        assert.ok(fs.existsSync(path.join(execDir(), 'f1', 'process.json')));
        const log = mon.log();
        assert.match(log,
          /exec f1 in fb: runc exec, not native: process\.user\.username is set/);
        assert.match(log, /exec f1 in fb: runc pid \d+/);
        assert.doesNotMatch(log, /exec f1 in fb: starter pid/);
        x.write('go\n');
        x.end();
        assert.equal((await x.done).code, 0, x.err);
        assert.equal(x.stdout().toString(), 'got-go\n');
        assert.equal(x.err, 'err\n');
        assert.equal(x.events('exec_exited')[0].exit_code, 5);
        // a start error on the fallback: runc's reason, the same words
        const bad = await mon.call([{ type: 'exec', exec_id: 'f2', container_id: 'fb',
          exec_mode: 'native', cmd: ['/no/such'], stdout: true }], { allowFail: true });
        assert.equal(bad.replies()[1].ok, false);
        assert.match(bad.replies()[1].error,
          /OCI runtime exec failed: .*stat \/no\/such: no such file or directory$/);
        assert.match(mon.log(), /exec f2 in fb: runc exec, not native/);
        await waitFor(() => execDirState().entries.length === 0, 'runc exec\'s dirs removed');
        await waitFor(() => monFds() === fdsBefore,
          `the monitor's fds back to ${fdsBefore}`);
        const rm = await mon.call([{ type: 'stop', container_id: 'fb', timeout: 0 },
          { type: 'remove', container_id: 'fb' }]);
        assert.equal(rm.replies()[2].ok, true);
      });

    test('stop with a timeout: TERM is ignored by pid 1, KILL follows (137); remove',
      async () => {
        const t0 = Date.now();
        const c = await mon.call([{ type: 'stop', container_id: 'idle', timeout: 1 }]);
        assert.ok(Date.now() - t0 >= 900, 'waited for the timeout');
        assert.equal(c.replies()[1].exit_code, 137);
        const again = await mon.call([{ type: 'stop', container_id: 'idle', timeout: 10 },
          { type: 'remove', container_id: 'idle' }, { type: 'remove', container_id: 'idle' }]);
        assert.equal(again.replies()[1].exit_code, 137); // idempotent, at once
        assert.ok(!fs.existsSync(path.join(mon.stateDir, 'containers/idle/status.json')));
      });
  });

  test('a client that never reads is ended at the backlog bound; the fast one and the log ' +
    'get every byte', async () => {
    await run('fast', ['sh', '-c', FAST], { stdin: true });
    const slow = mon.client([{ type: 'attach', container_id: 'fast', session: 'slow',
      stdout: true }], { noRead: true, waitEvent: 'attach_ended', match: 'session=slow' });
    await slow.until((x) => x.replies().length === 2, 'slow attach reply');
    const fast = mon.client([{ type: 'attach', container_id: 'fast', session: 'fast',
      stdin: true, stdout: true }], { relay: true, timeout: 60000 });
    await fast.until((x) => x.replies().length === 2, 'fast attach reply');
    fast.write('go\n');
    assert.equal((await slow.done).code, 0);
    const ended = slow.events('attach_ended')[0];
    assert.equal(ended.session, 'slow');
    assert.match(ended.error, /fell more than 4194304 bytes behind/);
    await fast.until((x) => x.exit, 'fast client done', 60000);
    fast.end();
    const out = fast.stdout();
    assert.equal(out.length, FAST_BYTES + 4);
    assert.equal(out.subarray(0, 41).toString(), '0123456789012345678901234567890123456789\n');
    assert.equal(out.subarray(-4).toString(), 'END\n');
    await exitedState('fast');
    // the log reassembles to the same bytes (P records continue a line)
    const text = readLog('fast').map((r) => r.content + (r.tag === 'F' ? '\n' : '')).join('');
    assert.equal(text.length, out.length);
    assert.ok(Buffer.from(text).equals(out));
  });

  test('kill -9 of the monitor\'s parent leaves the monitor and its containers running',
    async () => {
      const m2 = new Mon(path.join(tmp, 'p2'), 'p2');
      fs.mkdirSync(m2.runDir, { recursive: true });
      const parent = spawn('sh', ['-c', '"$0" "$@" --foreground >/dev/null 2>>"$RUN/mon.log" & ' +
        'echo $!; wait', MON, ...m2.args()], {
        detached: true, stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, RUN: m2.runDir },
      });
      try {
        m2.pid = Number(await new Promise((resolve) => parent.stdout.once('data', resolve)));
        await waitFor(() => fs.existsSync(m2.sock), 'p2 socket');
        const b = bundle('sleeper', ['sleep', '3600']);
        await m2.call([{ type: 'create', container_id: 'sleeper', bundle: b },
          { type: 'start', container_id: 'sleeper' }]);
        const cpid = m2.statusOf('sleeper').pid;
        const gone = new Promise((resolve) => parent.on('exit', resolve));
        process.kill(-parent.pid, 'SIGKILL'); // the parent's whole process group
        await gone;
        await new Promise((r) => setTimeout(r, 300));
        assert.ok(m2.alive(), 'the monitor survived');
        assert.ok(pidAlive(cpid), 'the container survived');
        const hello = await m2.call([]);
        assert.equal(hello.replies()[0].containers[0].state, 'running');
        const sd = await m2.call([{ type: 'shutdown' }]);
        assert.equal(sd.replies()[1].ok, true);
        await waitFor(() => !m2.alive(), 'p2 monitor exit');
        assert.ok(!pidAlive(cpid), 'shutdown killed the container');
        assert.equal(m2.sanitizerReport(), null);
      } finally {
        m2.kill();
      }
    });

  test('shutdown stops every container, removes runc state, socket and pid file; clean exit',
    async () => {
      await run('last', ['sleep', '3600']);
      const cpid = mon.statusOf('last').pid;
      const reaper = Number(fs.readFileSync(`/proc/${mon.pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      const c = await mon.call([{ type: 'shutdown' }], { waitEvent: 'exited' });
      assert.equal(c.replies()[1].ok, true);
      assert.equal(c.events('exited')[0].container_id, 'last');
      await waitFor(() => !mon.alive(), 'monitor exit');
      await waitFor(() => !pidAlive(reaper), 'its reaper exits with it');
      assert.ok(!pidAlive(cpid));
      assert.ok(!fs.existsSync(mon.sock));
      assert.ok(!fs.existsSync(path.join(mon.runDir, 'mon.pid')));
      const list = spawnSync('runc', ['--root', path.join(mon.runDir, 'runc'), 'list', '-q'],
        { encoding: 'utf8' });
      assert.equal(list.stdout.trim(), '');
      assert.equal(mon.sanitizerReport(), null);
      assert.match(mon.log(), /shutdown complete/);
    });
});
