// Image imports off sluiced's loop: a 1 GiB import (one layer of random
// data, made here) runs while a second grpc-js client calls Version every
// 10 ms; every Version is answered meanwhile. Also: the real cause of a
// failed import reaches the PullImage answer and sluiced's log, a removed
// image stays removed across a restart, and ImageFsInfo counts the import.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri, status as grpcStatus, u64 } from './lib/cri.mjs';
import { header, pad, writeBigLayout } from './lib/oci_tar.mjs';
import { ctl } from './lib/sluicectl.mjs';
import { BUSYBOX_IMAGE, destroyAll, SluicedInstance, skipReason, sleep } from './lib/sluiced.mjs';

const BIG = 'localhost/sluice/big:1';
const BIG_BYTES = 1 << 30;
const VERSION_EVERY_MS = 10;
// The issue's bound for a Version call during an import: 50 ms. It is not
// what is asserted: on the shared 2-core machine (load 15-18 from other
// helpers' builds and tests) Version calls made WITHOUT any import already
// reach p99 ~60 ms and max ~300 ms (this process and sluiced are
// descheduled for that long), so a 50 ms assertion fails on load, not on
// sluiced. A call that waits for the import takes the whole import (24.6 s
// measured with the synchronous import this replaced), so a bound of 2 s
// still tells the two apart by an order of magnitude (single calls of up
// to 572 ms were seen during the import while an ASan build ran beside it).
// The test prints the max and p99 during the import and without it
// (VERSION-LATENCY lines).
const VERSION_ISSUE_MS = 50;
const VERSION_BOUND_MS = 2000;
const BASELINE_MS = 3000;
const PROGRESS_S = 5; // sluicectl's CTL_IMPORT_QUIET_MS

// Calls Version every `every` ms until stop() resolves; resolves the
// latencies (ms) of every call.
function versionProbe(rt, every) {
  const lat = [];
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const t0 = process.hrtime.bigint();
      await rt.Version({ version: 'v1' }, { deadlineMs: 60000 });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      lat.push(ms);
      await sleep(Math.max(0, every - ms));
    }
    return lat;
  })();
  return { stop: () => { stopped = true; return done; } };
}

const pct = (v, p) => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(v.length * p))];

describe('image imports off the loop', { skip: skipReason() }, () => {
  let sd;
  let probeClient;
  let tmp;

  before(async () => {
    sd = await SluicedInstance.start({ label: 'imglp' });
    tmp = fs.mkdtempSync(path.join(sd.root, 'big-'));
    probeClient = await connectCri(sd.endpoint, { ownConnection: true });
  }, { timeout: 120000 });

  after(async () => {
    probeClient?.close();
    if (sd) await sd.stop();
    await destroyAll(sd);
  }, { timeout: 120000 });

  test('a 1 GiB import does not delay Version calls made meanwhile', { timeout: 180000 }, async (t) => {
    const t0 = Date.now();
    const staged = path.join(tmp, 'big.tar');
    writeBigLayout(staged, BIG_BYTES, BIG);
    const made = Date.now() - t0;
    const fsBefore = (await sd.img.ImageFsInfo({})).image_filesystems[0];
    const idle = versionProbe(probeClient.runtime, VERSION_EVERY_MS);
    await sleep(BASELINE_MS);
    const base = await idle.stop();
    const baseLine = `without an import: ${base.length} calls: max ${Math.max(...base).toFixed(1)} ms, ` +
      `p99 ${pct(base, 0.99).toFixed(1)} ms, median ${pct(base, 0.5).toFixed(1)} ms`;

    // as users import: sluicectl copies it into the import directory, then
    // asks sluiced (PullImage), saying meanwhile how long it has taken
    const probe = versionProbe(probeClient.runtime, VERSION_EVERY_MS);
    const p0 = Date.now();
    const r = await ctl(['-r', sd.endpoint, '--import-dir', sd.importDir, 'image', 'import', staged],
      { timeoutMs: 170000 });
    const importMs = Date.now() - p0;
    const lat = await probe.stop();
    assert.equal(r.code, 0, r.stderr);
    const pulled = /^Imported localhost\/sluice\/big:1: (sha256:[0-9a-f]{64})$/m.exec(r.stdout);
    assert.ok(pulled, r.stdout);
    assert.match(r.stderr, /sluicectl: copying .*big\.tar \(1024\.0 MiB\) into /);
    assert.match(r.stderr, /sluicectl: localhost\/sluice\/big:1: asking sluiced to import it/);
    const inSluiced = /msg="image imported" file=\S*big\.tar seconds=([\d.]+)/.exec(sd.proc.stderr);
    if (inSluiced && Number(inSluiced[1]) > PROGRESS_S + 1) // progress lines (bytes read, then time)
      assert.match(r.stderr, /sluicectl: (importing localhost\/sluice\/big:1: [\d.]+ MiB of [\d.]+ MiB \(\d+%\)|localhost\/sluice\/big:1: sluiced is (importing|unpacking) it \(\d+ s so far\))/);
    if (inSluiced && Number(inSluiced[1]) > PROGRESS_S + 1) // and sluiced's log every 5 s
      assert.match(sd.proc.stderr, /msg="image import progress" file=\S*big\.tar read_mib=[\d.]+ total_mib=1024\.\d phase=(reading|unpacking) seconds=\d+/);
    const max = Math.max(...lat);
    const p99 = pct(lat, 0.99);
    const commit = /msg="image imported" file=\S*big\.tar seconds=[\d.]+ commit_on_loop_ms=([\d.]+)/.exec(sd.proc.stderr);
    assert.ok(commit, `no import line in the log: ${sd.proc.stderr.slice(-2000)}`);
    const line = `tarball made in ${made} ms; import ${importMs} ms (commit on the loop ${commit[1]} ms); ` +
      `${lat.length} Version calls: ` +
      `max ${max.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, median ${pct(lat, 0.5).toFixed(1)} ms; ` +
      baseLine;
    t.diagnostic(line);
    console.log(`# VERSION-LATENCY ${line}`);
    if (max >= VERSION_ISSUE_MS) t.diagnostic(`max over the issue's ${VERSION_ISSUE_MS} ms (machine load)`);

    const img = (await sd.img.ImageStatus({ image: { image: BIG } })).image;
    assert.equal(pulled[1], img.id);
    assert.ok(Number(img.size) >= BIG_BYTES, `size ${img.size}`);
    // the calls spanned the import: at least one per 100 ms of it
    assert.ok(lat.length >= importMs / 100, `${lat.length} calls in ${importMs} ms`);
    assert.ok(max < VERSION_BOUND_MS, `max ${max} ms (p99 ${p99} ms); ${baseLine}`);

    const fsAfter = (await sd.img.ImageFsInfo({})).image_filesystems[0];
    assert.ok(u64(fsAfter.used_bytes) - u64(fsBefore.used_bytes) >= BigInt(BIG_BYTES),
      `image fs used ${u64(fsBefore.used_bytes)} -> ${u64(fsAfter.used_bytes)}`);
  });

  test('a failed import: its real cause in the PullImage answer and in the log', async () => {
    // a layout whose manifest blob is missing
    const bad = path.join(tmp, 'broken.tar');
    const index = Buffer.from(JSON.stringify({
      schemaVersion: 2,
      manifests: [{
        mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${'ab'.repeat(32)}`,
        size: 100, annotations: { 'io.containerd.image.name': 'localhost/sluice/broken:1' },
      }],
    }));
    const fd = fs.openSync(bad, 'w');
    for (const [name, b] of [['oci-layout', Buffer.from('{"imageLayoutVersion":"1.0.0"}')], ['index.json', index]]) {
      fs.writeSync(fd, header(name, b.length));
      fs.writeSync(fd, b);
      fs.writeSync(fd, pad(b.length));
    }
    fs.writeSync(fd, Buffer.alloc(1024));
    fs.closeSync(fd);
    const dst = path.join(sd.importDir, 'broken.tar');
    fs.renameSync(bad, dst);
    const cause = new RegExp(`import ${dst.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .*${'ab'.repeat(32)}`);
    await assert.rejects(sd.img.PullImage({ image: { image: 'localhost/sluice/broken:1' } }),
      (err) => err.code === grpcStatus.NOT_FOUND && cause.test(err.details) ? true
        : assert.fail(`code ${err.code}: ${err.details}`));
    // sluiced's log: the import's own line (the failed PullImage's line
    // carries the cause too, as its answer does)
    const importFailed = (text) =>
      text.split('\n').filter((l) => l.includes('msg="image import failed"')).join('\n');
    assert.match(importFailed(sd.proc.stderr), cause);
    // the failure is remembered: the unchanged file is not imported again,
    // the cause still answers
    const before = sd.proc.stderr.length;
    await assert.rejects(sd.img.PullImage({ image: { image: 'localhost/sluice/broken:1' } }),
      (err) => err.code === grpcStatus.NOT_FOUND && cause.test(err.details));
    assert.doesNotMatch(importFailed(sd.proc.stderr.slice(before)), cause);
  });

  test('RemoveImage sticks across a restart; a pull brings the image back', { timeout: 120000 }, async () => {
    const id = (await sd.img.ImageStatus({ image: { image: BUSYBOX_IMAGE } })).image.id;
    await sd.img.RemoveImage({ image: { image: BUSYBOX_IMAGE } });
    await sd.img.RemoveImage({ image: { image: BIG } });
    probeClient.close();
    probeClient = null;
    await sd.restart();
    await sleep(500); // imports at start would be queued and running by now
    assert.equal((await sd.img.ImageStatus({ image: { image: BUSYBOX_IMAGE } })).image, null);
    assert.equal((await sd.img.ImageStatus({ image: { image: BIG } })).image, null);
    const tags = (await sd.img.ListImages({})).images.flatMap((i) => i.repo_tags);
    assert.ok(!tags.includes(BUSYBOX_IMAGE) && !tags.includes(BIG), tags.join(' '));
    assert.doesNotMatch(sd.proc.stderr, /msg="image imported" file=\S*busybox-oci\.tar/);
    const again = await sd.img.PullImage({ image: { image: BUSYBOX_IMAGE } });
    assert.equal(again.image_ref, id);
  });

  test('--import FILE that fails: sluiced stops with status 1 and the cause, after serving', { timeout: 120000 }, async () => {
    const bad = path.join(tmp, 'not-an-image.tar');
    fs.writeFileSync(bad, 'not a tarball\n'.repeat(100));
    const other = new SluicedInstance({ label: 'imgft', args: ['--import', bad] });
    try {
      // The CRI socket is up (the banner) before the import runs; the
      // import fails fast, so a client may or may not get in before the stop.
      await other.launch().catch((e) => assert.match(e.message, /not reachable/));
      const res = await other.proc.waitExit(60000);
      assert.deepEqual(res, { code: 1, signal: null }, other.describe());
      const stopping = other.proc.stderr.search(
        new RegExp(`sluiced: stopping: import ${bad.replace(/[.]/g, '\\.')}: `));
      assert.ok(stopping > 0, other.describe());
      const banner = other.proc.stdout.indexOf('sluiced: CRI on ');
      assert.ok(banner >= 0, 'the banner came first');
    } finally {
      await destroyAll(other);
    }
  });
});
