// A RunPodSandbox cut short by sluiced's death (SIGKILL) leaves nothing
// behind once sluiced starts again: the kubelet got no id and will never
// name that pod, so the next sluiced undoes what the start had made — the
// pod monitor and its reaper, the pinned namespaces, the CNI allocation
// (host-local's address file) and the run directory. Deterministic case: a
// bridge plugin that sleeps in ADD, sluiced killed while it sleeps. Then
// SIGKILLs at many points of concurrent starts, CNI and host-network: after
// each restart, what is on the machine is exactly what ListPodSandbox says.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  CNI_BIN_DIR, SluicedInstance, podProcsUnder, skipReason, sleep,
} from './lib/sluiced.mjs';

const BRIDGE = 'slt-cutst';
const SUBNET = '10.89.52.0/24';
const CONVERGE_MS = 20000;
const ADD_SLEEP_S = 30; // the slow plugin's ADD: far longer than the test waits

// host-local keeps one file per address, holding the owner's container id.
function ipamOwners(dir) {
  const owners = [];
  if (!fs.existsSync(dir)) return owners;
  for (const net of fs.readdirSync(dir)) {
    const nd = path.join(dir, net);
    if (!fs.statSync(nd).isDirectory()) continue;
    for (const f of fs.readdirSync(nd)) {
      if (!/^\d+\.\d+\.\d+\.\d+$/.test(f)) continue;
      let text;
      try {
        text = fs.readFileSync(path.join(nd, f), 'utf8');
      } catch (e) { // released between the listing and the read: not an owner any more
        if (e.code === 'ENOENT') continue;
        throw e;
      }
      owners.push(text.split(/\s/)[0]);
    }
  }
  return owners;
}

// A plugin dir like CNI_BIN_DIR whose bridge sleeps before ADD.
function slowBridgeDir(root) {
  const dir = path.join(root, 'cni-bin-slow');
  fs.mkdirSync(dir, { recursive: true });
  for (const p of fs.readdirSync(CNI_BIN_DIR))
    if (p !== 'bridge') fs.symlinkSync(path.join(CNI_BIN_DIR, p), path.join(dir, p));
  fs.writeFileSync(path.join(dir, 'bridge'),
    `#!/bin/sh\n[ "$CNI_COMMAND" = ADD ] && sleep ${ADD_SLEEP_S}\n` +
    `exec ${path.join(CNI_BIN_DIR, 'bridge')}\n`, { mode: 0o755 });
  return dir;
}

const CUT_LOG = /removed a pod whose start was cut[^\n]*/g;

async function waitStderr(sd, re, ms) {
  const end = Date.now() + ms;
  while (!re.test(sd.proc.stderr)) {
    if (Date.now() > end) throw new Error(`no ${re} in sluiced's log: ${sd.describe()}`);
    await sleep(50);
  }
}

// What this instance has on the machine, against what sluiced lists.
async function state(sd) {
  const listed = new Set((await sd.rt.ListPodSandbox({})).items.map((p) => p.id));
  const podsDir = path.join(sd.runDir, 'pods');
  const runDirs = fs.existsSync(podsDir) ? fs.readdirSync(podsDir) : [];
  // A monitor may exit between the listing and the read (its pod was just
  // undone): a vanished /proc entry is a monitor that is no longer left.
  const monRunDirs = podProcsUnder(sd.root, ['sluice-mon']).flatMap((pid) => {
    let argv;
    try {
      argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch (e) {
      if (e.code === 'ENOENT' || e.code === 'ESRCH') return [];
      throw e;
    }
    return [path.basename(argv[argv.indexOf('--run-dir') + 1] || '')];
  });
  return { listed, runDirs, monRunDirs, ipam: ipamOwners(sd.ipamDir) };
}

// Polls until nothing unlisted is left; returns the last state.
async function converged(sd) {
  const end = Date.now() + CONVERGE_MS;
  for (;;) {
    const s = await state(sd);
    const stray = [...s.runDirs, ...s.monRunDirs, ...s.ipam].filter((id) => !s.listed.has(id));
    if (!stray.length || Date.now() > end) return { ...s, stray };
    await sleep(100);
  }
}

const skip = skipReason({ cni: true });

describe('a pod start cut by sluiced\'s death is undone by the next sluiced', { skip }, () => {
  let sd;
  before(async () => {
    sd = await SluicedInstance.start({ label: 'cutst', cni: { bridge: BRIDGE, subnet: SUBNET } });
  });
  after(async () => {
    if (!sd) return;
    await sd.kill();
    sd.opts.args = [];
    await sd.launch();
    await sd.stop();
  });

  test('killed while the bridge plugin runs ADD: plugin, namespaces, run dir all gone', async () => {
    await sd.kill();
    sd.opts.args = ['--cni-bin-dir', slowBridgeDir(sd.root)];
    await sd.launch();
    const run = sd.runPod('slow').catch((e) => e);
    const podsDir = path.join(sd.runDir, 'pods');
    const end = Date.now() + CONVERGE_MS;
    // the run dir exists and the slow ADD is running
    let cut = null;
    while (!cut && Date.now() < end) {
      const ids = fs.existsSync(podsDir) ? fs.readdirSync(podsDir) : [];
      if (ids.length && fs.existsSync(path.join(podsDir, ids[0], 'start-config.pb')) &&
        fs.existsSync(path.join(podsDir, ids[0], 'ns', 'net')))
        cut = ids[0];
      else await sleep(20);
    }
    assert.ok(cut, 'RunPodSandbox never reached the network step');
    await sleep(300);
    await sd.kill();
    assert.ok((await run) instanceof Error, 'RunPodSandbox answered though sluiced was killed');
    const pluginEnv = `CNI_CONTAINERID=${cut}`;
    const plugins = () => fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/environ`, 'utf8').split('\0').includes(pluginEnv);
      } catch {
        return false;
      }
    });
    assert.ok(plugins().length > 0, 'the slow ADD is not running after the kill');
    sd.opts.args = [];
    await sd.launch();
    await waitStderr(sd, new RegExp(`removed a pod whose start was cut[^\\n]*${cut}`), CONVERGE_MS);
    const s = await converged(sd);
    assert.deepEqual(s.stray, [], JSON.stringify(s));
    assert.deepEqual(plugins(), [], 'the dead sluiced\'s ADD still runs');
    assert.ok(!fs.existsSync(path.join(podsDir, cut)));
  });

  test('SIGKILL at 12 points of 3 concurrent starts: what is left is what is listed', async (t) => {
    let cuts = 0;
    for (const delay of [0, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500]) {
      const hostNetwork = delay % 2 === 1 || delay === 50;
      const runs = [0, 1, 2].map((i) => sd.runPod(`cut${delay}-${i}`, { hostNetwork })
        .then((r) => r.id, () => null));
      await sleep(delay);
      await sd.kill();
      await Promise.all(runs);
      await sd.launch();
      const s = await converged(sd);
      assert.deepEqual(s.stray, [], `after a kill at ${delay} ms: ${JSON.stringify(s)}\n` +
        sd.proc.stderr.split('\n').filter((l) => /cut|pod/.test(l)).join('\n'));
      cuts += sd.proc.stderr.match(CUT_LOG)?.length ?? 0;
      await sd.removeAllPods();
      const left = await converged(sd);
      assert.deepEqual([...left.runDirs, ...left.monRunDirs, ...left.ipam], [],
        `after removing every listed pod (${delay} ms)`);
    }
    // how many kills fell inside a start varies with timing; the first
    // test makes one for certain
    t.diagnostic(`starts cut and undone: ${cuts}`);
  });
});
