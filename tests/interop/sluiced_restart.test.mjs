// sluiced is SIGKILLed while its containers run and restarted on the same
// dirs: the pod monitors keep the containers (and their logs) going, and
// the new daemon lists pods and containers with the right states (one that
// exited meanwhile shows EXITED with its code, one whose command is missing
// EXITED 128 StartError), and exec, attach and port-forward into them work
// again. Then a SIGTERM restart. Needs root, runc, busybox-static, CNI
// plugins and go.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { goClientSkip, runGoClient } from './lib/goclient.mjs';
import { CH, V5, SUCCESS_JSON, connect, runSession, terminateAll } from './lib/session.mjs';
import {
  SluicedInstance, criLogLines, monitorsUnder, parseCriLog, pidAlive, skipReason, sleep, waitLog,
  wsUrl,
} from './lib/sluiced.mjs';

const skip = skipReason({ cni: true }) || goClientSkip();
const ECHO_PORT = 8080;

async function until(pred, what, ms = 15000) {
  const end = Date.now() + ms;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('sluiced restart: containers outlive the daemon', { skip }, () => {
  let sd;
  let hostPod;
  let cniPod;
  let podIp;
  const c = {}; // name → container id

  let startError = null;
  // A failing before() would only cancel the tests: the first test reports it.
  before(async () => {
    sd = await SluicedInstance.start({ label: 'rst',
      cni: { bridge: 'slt-rst', subnet: '10.89.3.0/24' } }).catch((e) => {
      startError = e;
      return null;
    });
  });
  after(async () => {
    terminateAll();
    await sd?.destroy();
  });

  const statusFile = (id) => path.join(sd.stateDir, 'containers', id, 'status.json');
  const byId = async () => Object.fromEntries(
    (await sd.rt.ListContainers({})).containers.map((x) => [x.id, x]));

  test('before: pods and containers in every state', async () => {
    if (startError) throw startError;
    hostPod = await sd.runPod('keeper', { hostNetwork: true, labels: { app: 'keeper' } });
    cniPod = await sd.runPod('net', { labels: { app: 'net' } });
    podIp = (await sd.rt.PodSandboxStatus({ pod_sandbox_id: cniPod.id })).status.network.ip;
    assert.match(podIp, /^10\.89\.3\.\d+$/);
    c.runner = await sd.runContainer(hostPod, 'runner', { command: ['sleep', '100000'] });
    c.cat = await sd.runContainer(hostPod, 'cat', { command: ['cat'], stdin: true });
    c.ticker = await sd.runContainer(hostPod, 'ticker', {
      command: ['sh', '-c', 'i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 0.1; done'],
    });
    // exits with 5 once /tmp/die exists (made from the host while sluiced is down)
    c.dier = await sd.runContainer(hostPod, 'dier', {
      command: ['sh', '-c', 'while [ ! -e /tmp/die ]; do sleep 0.1; done; exit 5'],
    });
    c.done = await sd.runContainer(hostPod, 'done', { command: ['sh', '-c', 'exit 3'] });
    c.created = await sd.createContainer(hostPod, 'created', {
      command: ['sh', '-c', 'sleep 0.5; exit 6'],
    });
    // Commands that do not exist: one fails its start before the restart,
    // one is only created (its start fails after the restart).
    c.nocmd = await sd.createContainer(hostPod, 'nocmd', { command: ['no-such-command'] });
    await assert.rejects(sd.rt.StartContainer({ container_id: c.nocmd }), /no-such-command/);
    c.nocmdLater = await sd.createContainer(hostPod, 'nocmd-later', { command: ['/bin/nope'] });
    c.echo = await sd.runContainer(cniPod, 'echo', {
      command: ['nc', '-ll', '-p', String(ECHO_PORT), '-e', 'cat'],
    });
    await sd.waitState(c.done, 'CONTAINER_EXITED');
    await until(async () => (await sd.execSync(c.echo, ['netstat', '-ltn'])).stdout.toString()
      .includes(`:${ECHO_PORT}`), 'nc listening');
    await waitLog(sd.logPath(hostPod, 'ticker'), (r) => r.length >= 3, 'ticks');
  });

  test('SIGKILL sluiced: monitors and containers keep running, logs keep growing', async () => {
    const mons = monitorsUnder(sd.root);
    await sd.kill();
    assert.equal(mons.length, 2, `monitors: ${mons}`);
    await sleep(300);
    assert.deepEqual(monitorsUnder(sd.root).sort(), mons.sort(), 'a monitor died with sluiced');
    for (const id of [c.runner, c.cat, c.ticker, c.dier, c.echo]) {
      const st = JSON.parse(fs.readFileSync(statusFile(id), 'utf8'));
      assert.equal(st.state, 'running', `${id}: ${JSON.stringify(st)}`);
      assert.ok(pidAlive(st.pid), `container ${id} pid ${st.pid} is gone`);
    }
    // The dier exits while nobody is there to hear it.
    fs.writeFileSync(path.join(sd.stateDir, 'containers', c.dier, 'rootfs', 'tmp', 'die'), '');
    await until(() => JSON.parse(fs.readFileSync(statusFile(c.dier), 'utf8')).state === 'exited',
      'the dier\'s record says exited');
    const log = sd.logPath(hostPod, 'ticker');
    const before = parseCriLog(fs.readFileSync(log, 'utf8')).length;
    await sleep(500);
    assert.ok(parseCriLog(fs.readFileSync(log, 'utf8')).length > before,
      'the log did not grow while sluiced was down');
  });

  test('restart: pods READY with their labels and IP; containers in the right states',
    async () => {
      await sd.launch();
      const pods = (await sd.rt.ListPodSandbox({})).items;
      assert.deepEqual(pods.map((p) => p.id).sort(), [hostPod.id, cniPod.id].sort());
      for (const p of pods) {
        assert.equal(p.state, 'SANDBOX_READY', p.id);
        assert.deepEqual(p.labels, p.id === hostPod.id ? { app: 'keeper' } : { app: 'net' });
      }
      const st = (await sd.rt.PodSandboxStatus({ pod_sandbox_id: cniPod.id })).status;
      assert.equal(st.network.ip, podIp);
      const all = await byId();
      assert.equal(Object.keys(all).length, Object.keys(c).length);
      const want = {
        runner: 'CONTAINER_RUNNING', cat: 'CONTAINER_RUNNING', ticker: 'CONTAINER_RUNNING',
        echo: 'CONTAINER_RUNNING', dier: 'CONTAINER_EXITED', done: 'CONTAINER_EXITED',
        created: 'CONTAINER_CREATED', nocmd: 'CONTAINER_EXITED', nocmdLater: 'CONTAINER_CREATED',
      };
      for (const [name, state] of Object.entries(want))
        assert.equal(all[c[name]]?.state, state, `${name}: ${JSON.stringify(all[c[name]])}`);
      const dier = await sd.status(c.dier);
      assert.equal(dier.exit_code, 5);
      assert.equal(dier.reason, 'Error');
      assert.notEqual(String(dier.finished_at), '0');
      assert.equal((await sd.status(c.done)).exit_code, 3);
      const nocmd = await sd.status(c.nocmd);
      assert.deepEqual([nocmd.exit_code, nocmd.reason, String(nocmd.started_at)],
        [128, 'StartError', '0']);
      assert.match(nocmd.message, /exec: "no-such-command": executable file not found in \$PATH/);
      assert.notEqual(String(nocmd.finished_at), '0');
      const runner = await sd.status(c.runner);
      assert.notEqual(String(runner.started_at), '0');
      assert.equal(runner.metadata.name, 'runner');
    });

  test('after the restart: ExecSync and SPDY and WebSocket exec', async () => {
    const r = await sd.execSync(c.runner, ['sh', '-c', 'echo alive; exit 2']);
    assert.equal(r.exit_code, 2);
    assert.equal(r.stdout.toString(), 'alive\n');
    const g = await runGoClient(['exec', await sd.execUrl(c.runner, ['sh', '-c', 'echo spdy; exit 4'])]);
    assert.equal(g.code, 4, g.stderr);
    assert.equal(g.stdout.toString(), 'spdy\n');
    const s = await runSession(wsUrl(await sd.execUrl(c.runner, ['echo', 'ws'])), { protocols: [V5] });
    assert.equal(s.text(CH.STDOUT), 'ws\n');
    assert.equal(s.text(CH.ERROR), SUCCESS_JSON);
  });

  test('after the restart: attach to cat, and the line reaches the log', async () => {
    const s = await connect(wsUrl(await sd.attachUrl(c.cat, { stdin: true })), { protocols: [V5] });
    s.send(CH.STDIN, 'after restart\n');
    await s.waitFor((x) => x.text(CH.STDOUT) === 'after restart\n', 'the echo');
    s.ws.close(1000);
    await s.waitClosed();
    await waitLog(sd.logPath(hostPod, 'cat'),
      (recs) => criLogLines(recs, 'stdout').includes('after restart'), 'the log line');
  });

  test('after the restart: port-forward into the CNI pod', async () => {
    const r = await runGoClient(['pf', await sd.portForwardUrl(cniPod.id), String(ECHO_PORT)],
      { input: 'still there\n' });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.toString(), 'still there\n');
  });

  test('after the restart: start the created container; its exit is seen', async () => {
    await sd.rt.StartContainer({ container_id: c.created });
    const st = await sd.waitState(c.created, 'CONTAINER_EXITED');
    assert.equal(st.exit_code, 6);
  });

  test('after the restart: a created container whose command is missing fails its start ' +
    'and reads EXITED 128 StartError', async () => {
    await assert.rejects(sd.rt.StartContainer({ container_id: c.nocmdLater }),
      /exec: "\/bin\/nope": stat \/bin\/nope: no such file or directory/);
    const st = await sd.status(c.nocmdLater);
    assert.deepEqual([st.state, st.exit_code, st.reason], ['CONTAINER_EXITED', 128, 'StartError']);
    assert.match(st.message, /\/bin\/nope/);
  });

  test('after the restart: stop with a grace period, reopen a log', async () => {
    // sleep is pid 1 of its pid namespace without a TERM handler: TERM does
    // nothing, SIGKILL comes after the grace period.
    const t0 = Date.now();
    await sd.rt.StopContainer({ container_id: c.runner, timeout: 1 }, { deadlineMs: 30000 });
    const took = Date.now() - t0;
    assert.ok(took >= 900 && took < 6000, `StopContainer(timeout 1) took ${took} ms`);
    const st = await sd.status(c.runner);
    assert.equal(st.state, 'CONTAINER_EXITED');
    assert.equal(st.exit_code, 137);
    const log = sd.logPath(hostPod, 'ticker');
    fs.renameSync(log, `${log}.1`);
    await sd.rt.ReopenContainerLog({ container_id: c.ticker });
    await waitLog(log, (r) => r.length >= 2, 'ticks in the reopened log');
  });

  let beforeTerm;
  test('SIGTERM with pods running: sluiced exits 0, the monitors stay', async () => {
    beforeTerm = await byId();
    sd.cri.close();
    sd.cri = null;
    sd.proc.proc.kill('SIGTERM');
    const res = await sd.proc.waitExit(15000);
    if (!res) { // make way for the next test
      sd.proc.proc.kill('SIGKILL');
      await sd.proc.exitPromise;
    }
    assert.deepEqual(res, { code: 0, signal: null },
      `no exit within 15 s of SIGTERM while pods exist: ${sd.describe()}`);
    assert.equal(monitorsUnder(sd.root).length, 2, 'SIGTERM of sluiced stopped a monitor');
  });

  test('start again: the same pods and containers, exec works', async () => {
    assert.ok(beforeTerm, 'the SIGTERM test did not run');
    await sd.launch();
    const post = await byId();
    assert.deepEqual(Object.keys(post).sort(), Object.keys(beforeTerm).sort());
    for (const id of Object.keys(beforeTerm)) assert.equal(post[id].state, beforeTerm[id].state, id);
    const r = await sd.execSync(c.cat, ['echo', 'ok']);
    assert.equal(r.stdout.toString(), 'ok\n');
  });

  test('SIGTERM: exit 0, sanitizer-clean, pods removed, nothing left behind', async () => {
    terminateAll();
    await sd.stop();
  });
});
