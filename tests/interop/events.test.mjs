// GetContainerEvents, the stream behind the kubelet's evented PLEG, from an
// independent client (@grpc/grpc-js, lib/cri.mjs): the events of a
// create/start/stop/remove sequence in order, with the ids, times and
// statuses the kubelet builds its pod status from; several subscribers at
// once; the stop seen when a container exits on its own (the pod
// monitor's exit notice); a subscriber that leaves is cleaned up (its
// slot and sluiced's fds come back); one that does not read is ended with
// RESOURCE_EXHAUSTED after max-grpc-stream-backlog while the others get
// everything. containerd 1.6 answers GetContainerEvents UNIMPLEMENTED (its
// CRI plugin has it from 1.7), which the last test pins.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { briefEvent, connectCri, status as S } from './lib/cri.mjs';
import {
  SluicedInstance, destroyAll, grpcStatus, h2connect, lpm, serialize, skipReason, sleep,
} from './lib/sluiced.mjs';

const skip = skipReason();
const WAIT_MS = 20000;
const RT = '/runtime.v1.RuntimeService/';
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CD_SCRIPT = path.join(REPO, 'scripts/containerd');
// A private containerd for this file (common rules: own dir and port).
const CD_DIR = '/run/sluice-test/containerd-grpc';
const CD_STREAM_PORT = '10117';

const CREATED = 'CONTAINER_CREATED_EVENT';
const STARTED = 'CONTAINER_STARTED_EVENT';
const STOPPED = 'CONTAINER_STOPPED_EVENT';
const DELETED = 'CONTAINER_DELETED_EVENT';

function fdCount(pid) {
  return fs.readdirSync(`/proc/${pid}/fd`).length;
}

async function waitFds(pid, pred, what) {
  const end = Date.now() + WAIT_MS;
  let n;
  while (!pred((n = fdCount(pid)))) {
    if (Date.now() > end) throw new Error(`${what}: sluiced has ${n} fds`);
    await sleep(50);
  }
  return n;
}

// The events from index `from` on, as [type, id] pairs.
function seq(events, from = 0) {
  return events.slice(from).map((e) => [e.container_event_type, e.container_id]);
}

function ctrStatus(ev, id) {
  return ev.containers_statuses.find((c) => c.id === id);
}

// A raw HTTP/2 subscriber (node:http2) that stops reading: node returns
// no window credit for a paused stream.
function rawSubscribe(session) {
  const req = session.request({
    ':method': 'POST', ':path': `${RT}GetContainerEvents`, 'content-type': 'application/grpc',
    te: 'trailers',
  });
  const out = { headers: null, trailers: {}, chunks: [], closed: false, req };
  req.on('response', (h) => { out.headers = h; });
  req.on('trailers', (t) => { out.trailers = t; });
  req.on('data', (d) => out.chunks.push(d));
  req.on('error', () => {});
  out.done = new Promise((resolve) => req.on('close', () => { out.closed = true; resolve(); }));
  req.end(lpm(serialize('RuntimeService', 'GetContainerEvents', {})));
  return out;
}

// Whole length-prefixed messages in buf.
function countMessages(buf) {
  let off = 0;
  let n = 0;
  while (buf.length - off >= 5 && buf.length - off - 5 >= buf.readUInt32BE(off + 1)) {
    off += 5 + buf.readUInt32BE(off + 1);
    n++;
  }
  assert.equal(off, buf.length, 'only whole messages');
  return n;
}

describe('GetContainerEvents', { skip }, () => {
  let sd;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'events', args: ['--max-event-subscribers', '4'] });
  });
  after(() => destroyAll(sd));

  test('create, start, stop, remove of a container and its pod: in order, to two subscribers',
    async () => {
      const other = await connectCri(sd.endpoint, { ownConnection: true });
      sd.clients.push(other);
      const a = sd.cri.events();
      const b = other.events();
      try {
        await sequenceSeenByBoth(a, b);
      } finally {
        a.cancel();
        b.cancel();
      }
    });

  // The pod and container lifecycle, and what a and b saw of it.
  async function sequenceSeenByBoth(a, b) {
      await Promise.all([a.ready, b.ready]);
      const t0 = BigInt(Date.now()) * 1000000n;
      const pod = await sd.runPod('ev', { hostNetwork: true, labels: { app: 'ev' } });
      // Exits 7 on SIGTERM (as PID 1, sleep would ignore it).
      const id = await sd.createContainer(pod, 'sleeper',
        { command: ['sh', '-c', 'trap "exit 7" TERM; while :; do sleep 0.1; done'] });
      await sd.rt.StartContainer({ container_id: id });
      await sd.rt.StopContainer({ container_id: id, timeout: 10 });
      await sd.rt.RemoveContainer({ container_id: id });
      await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
      await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
      const want = [[CREATED, pod.id], [STARTED, pod.id], [CREATED, id], [STARTED, id],
        [STOPPED, id], [DELETED, id], [STOPPED, pod.id], [DELETED, pod.id]];
      for (const sub of [a, b])
        await sub.waitFor((evs) => evs.length >= want.length, WAIT_MS, 'eight events');
      await sleep(300); // nothing more comes
      const t1 = BigInt(Date.now()) * 1000000n;
      assert.deepEqual(seq(a.events), want);
      assert.deepEqual(seq(b.events), want);
      const ev = a.events;
      let last = 0n;
      for (const e of ev) {
        const at = BigInt(e.created_at);
        assert.ok(at >= t0 && at <= t1 && at >= last, `created_at ${at} in [${t0}, ${t1}]`);
        last = at;
        // The kubelet drops events without the pod's status and metadata.
        assert.equal(e.pod_sandbox_status.id, pod.id);
        assert.equal(e.pod_sandbox_status.metadata.uid, pod.config.metadata.uid);
        assert.equal(e.pod_sandbox_status.metadata.name, 'ev');
        assert.equal(e.pod_sandbox_status.labels.app, 'ev');
      }
      assert.deepEqual(ev.map((e) => e.pod_sandbox_status.state),
        ['SANDBOX_READY', 'SANDBOX_READY', 'SANDBOX_READY', 'SANDBOX_READY', 'SANDBOX_READY',
          'SANDBOX_READY', 'SANDBOX_NOTREADY', 'SANDBOX_NOTREADY']);
      // The statuses of the pod's containers, as ContainerStatus reports them.
      assert.deepEqual(ev.map((e) => e.containers_statuses.length), [0, 0, 1, 1, 1, 0, 0, 0]);
      assert.equal(ctrStatus(ev[2], id).state, 'CONTAINER_CREATED');
      assert.equal(ctrStatus(ev[2], id).metadata.name, 'sleeper');
      assert.equal(ctrStatus(ev[2], id).image.image, 'localhost/sluice/busybox:latest');
      assert.equal(ctrStatus(ev[3], id).state, 'CONTAINER_RUNNING');
      assert.ok(Number(ctrStatus(ev[3], id).started_at) > 0);
      const stopped = ctrStatus(ev[4], id);
      assert.equal(stopped.state, 'CONTAINER_EXITED');
      assert.equal(stopped.exit_code, 7); // its TERM trap
      assert.equal(stopped.reason, 'Error');
      assert.ok(Number(stopped.finished_at) >= Number(stopped.started_at));
  }

  test('a container that exits by itself: STOPPED with its exit code, from the monitor',
    async () => {
      const sub = sd.cri.events();
      await sub.ready;
      const pod = await sd.runPod('exit', { hostNetwork: true });
      const id = await sd.runContainer(pod, 'three', { command: ['sh', '-c', 'sleep 0.3; exit 3'] });
      const evs = await sub.waitFor((e) => e.some((x) => x.container_event_type === STOPPED),
        WAIT_MS, 'STOPPED');
      assert.deepEqual(seq(evs), [[CREATED, pod.id], [STARTED, pod.id], [CREATED, id],
        [STARTED, id], [STOPPED, id]]);
      const st = ctrStatus(evs[4], id);
      assert.equal(st.state, 'CONTAINER_EXITED');
      assert.equal(st.exit_code, 3);
      // The same as ContainerStatus says now.
      const now = await sd.status(id);
      assert.equal(now.exit_code, 3);
      assert.equal(now.finished_at, st.finished_at);
      sub.cancel();
    });

  test('RemovePodSandbox of a ready pod with a running container: stopped, then deleted',
    async () => {
      const pod = await sd.runPod('rm', { hostNetwork: true });
      const id = await sd.runContainer(pod, 'sleeper', { command: ['sleep', '1000'] });
      const sub = sd.cri.events();
      await sub.ready;
      await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
      await sub.waitFor((e) => e.length >= 4, WAIT_MS, 'four events');
      await sleep(300);
      // containerd's order too: RemovePodSandbox stops the pod (its
      // containers, then the sandbox), then removes the containers.
      assert.deepEqual(seq(sub.events),
        [[STOPPED, id], [STOPPED, pod.id], [DELETED, id], [DELETED, pod.id]]);
      assert.equal(ctrStatus(sub.events[0], id).exit_code, 137); // SIGKILL
      assert.equal(sub.events[3].pod_sandbox_status.id, pod.id);
      sub.cancel();
    });

  test('subscribers that leave are cleaned: their slots and sluiced\'s fds come back',
    async () => {
      const pid = sd.proc.proc.pid;
      await sleep(300); // earlier subscribers' cancels have landed
      const base = fdCount(pid);
      // Two grpc-js clients on connections of their own, two raw HTTP/2
      // sessions: four subscribers, the limit.
      const clients = [];
      for (let i = 0; i < 2; i++) {
        const c = await connectCri(sd.endpoint, { ownConnection: true });
        sd.clients.push(c);
        clients.push(c);
      }
      const subs = clients.map((c) => c.events());
      const sessions = [await h2connect(sd.sock), await h2connect(sd.sock)];
      const raws = sessions.map((session) => rawSubscribe(session));
      await Promise.all(subs.map((x) => x.ready));
      await waitFds(pid, (n) => n >= base + 4, 'four more connections');
      // The fifth is over max-event-subscribers.
      const fifth = sd.cri.events();
      await fifth.ended;
      assert.equal(fifth.status.code, S.RESOURCE_EXHAUSTED);
      assert.match(fifth.status.details, /4 GetContainerEvents streams are open.*max-event-subscribers 4/);
      assert.ok(raws.every((r) => r.headers?.[':status'] === 200));
      // Two cancel their call (RST_STREAM) and close their client; two
      // vanish (their socket closed, no RST_STREAM nor GOAWAY).
      for (const x of subs) x.cancel();
      for (const c of clients) c.close();
      for (const session of sessions) session.destroy();
      const fds = await waitFds(pid, (n) => n <= base, 'the four connections gone');
      // Four slots again: four new subscribers, all get the next event.
      const again = [0, 1, 2, 3].map(() => sd.cri.events());
      await Promise.all(again.map((x) => x.ready));
      const pod = await sd.runPod('slots', { hostNetwork: true });
      for (const x of again)
        await x.waitFor((e) => e.length >= 2, WAIT_MS, 'the pod events');
      for (const x of again) x.cancel();
      await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
      console.log(`sluiced fds: ${base} at start, ${base + 4} or more with four subscribers' ` +
        `connections, ${fds} after they left`);
    });

  test('SIGTERM with a subscriber still open: its stream ends, exit 0, sanitizer-clean',
    async () => {
      const sub = sd.cri.events();
      await sub.ready;
      await sd.stop();
      const st = await Promise.race([sub.ended, sleep(WAIT_MS).then(() => null)]);
      assert.ok(st, 'the stream ended');
      assert.equal(st.code, S.UNAVAILABLE);
    });
});

describe('GetContainerEvents: a subscriber that does not read', { skip }, () => {
  let sd;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'evslow', args: ['--max-grpc-stream-backlog', '65536'] });
  });
  after(() => destroyAll(sd));

  test('is ended with RESOURCE_EXHAUSTED after the backlog; a reading one gets every event',
    async () => {
      const session = await h2connect(sd.sock);
      const slow = rawSubscribe(session);
      const fast = sd.cri.events();
      await fast.ready;
      await sleep(100);
      assert.equal(slow.headers[':status'], 200);
      slow.req.pause();
      // 16 KiB of annotations make every event > 16 KiB: the 64 KiB
      // window holds about 4, the backlog 3 more, the next overflows.
      const annotations = { 'sluice.test/pad': 'p'.repeat(16384) };
      const pods = [];
      for (let i = 0; i < 3; i++) {
        const pod = await sd.runPod(`slow${i}`, { hostNetwork: true, annotations });
        pods.push(pod);
        await sd.rt.StopPodSandbox({ pod_sandbox_id: pod.id });
        await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
      }
      await fast.waitFor((e) => e.length >= 12, WAIT_MS, 'twelve events');
      assert.deepEqual(seq(fast.events), pods.flatMap((p) => [[CREATED, p.id], [STARTED, p.id],
        [STOPPED, p.id], [DELETED, p.id]]));
      await sleep(200);
      assert.equal(slow.closed, false);
      slow.req.resume();
      await Promise.race([slow.done, sleep(WAIT_MS)]);
      assert.ok(slow.closed, 'the slow stream ended');
      const st = grpcStatus({ headers: slow.headers, trailers: slow.trailers });
      assert.equal(st.code, S.RESOURCE_EXHAUSTED);
      assert.match(st.message, /the client fell behind: \d+ bytes of messages waiting, limit 65536 bytes; \d+ messages dropped/);
      const got = countMessages(Buffer.concat(slow.chunks));
      assert.ok(got >= 3 && got < 12, `the slow subscriber got ${got} of 12 events`);
      session.close();
      // sluiced serves on, and the reading subscriber is still subscribed.
      const pod = await sd.runPod('after', { hostNetwork: true });
      await fast.waitFor((e) => e.length >= 14, WAIT_MS, 'later events');
      await sd.rt.RemovePodSandbox({ pod_sandbox_id: pod.id });
      fast.cancel();
      console.log(`slow subscriber: ${got} events, then ${st.message}`);
    });

  test('sluiced exits 0 and sanitizer-clean', async () => {
    await sd.stop();
  });
});

function containerdSkip() {
  if (process.getuid?.() !== 0) return 'containerd needs root';
  for (const c of ['containerd', 'runc'])
    if (spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0) return `${c} is not installed`;
  return false;
}

describe('containerd 1.6 (reference)', { skip: containerdSkip() }, () => {
  const env = { ...process.env, SLUICE_CONTAINERD_DIR: CD_DIR,
    SLUICE_CONTAINERD_STREAM_PORT: CD_STREAM_PORT };
  let startedHere = false;
  let cri;
  before(async () => {
    if (spawnSync(CD_SCRIPT, ['status'], { env }).status !== 0) {
      const r = spawnSync(CD_SCRIPT, ['start'], { env, encoding: 'utf8', timeout: 180000 });
      assert.equal(r.status, 0, r.stderr);
      startedHere = true;
    }
    const sock = path.join(CD_DIR, 'containerd.sock');
    assert.ok(await new Promise((resolve) => {
      const s = net.connect(sock, () => { s.destroy(); resolve(true); });
      s.on('error', () => resolve(false));
    }), `containerd listens on ${sock}`);
    cri = await connectCri(`unix://${sock}`);
  });
  after(() => {
    cri?.close();
    if (startedHere) spawnSync(CD_SCRIPT, ['stop', '--purge'], { env, stdio: 'ignore', timeout: 60000 });
  });

  test('answers GetContainerEvents UNIMPLEMENTED (sluiced streams them, as containerd 1.7+)',
    async () => {
      const sub = cri.events();
      await sub.ended;
      assert.equal(sub.status.code, S.UNIMPLEMENTED);
      assert.match(sub.status.details, /GetContainerEvents not implemented/);
      console.log(`containerd: ${sub.status.code} ${sub.status.details}; events ${JSON.stringify(sub.events.map(briefEvent))}`);
    });
});
