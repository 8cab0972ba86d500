// Byte progress of an image import, as users see it: `sluicectl image
// import` of a ~150 MiB OCI layout (one layer of random data, made here)
// prints how far its copy and sluiced's import are on stderr, and an
// independent grpc-js client asking ImageStatus (verbose) for the name
// meanwhile gets the import's progress in info["importProgress"].
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { connectCri } from './lib/cri.mjs';
import { writeBigLayout } from './lib/oci_tar.mjs';
import { ctl } from './lib/sluicectl.mjs';
import { destroyAll, SluicedInstance, skipReason, sleep } from './lib/sluiced.mjs';

const REF = 'localhost/sluice/progress:1';
const LAYER_BYTES = 150 << 20;
const INTERVAL_MS = 1; // sluicectl --progress-interval: many lines, even for a fast copy
const POLL_MS = 20; // the grpc-js client's ImageStatus calls
const MIB = 1 << 20;
const PHASES = ['queued', 'reading', 'unpacking'];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

// The MiB counts of sluicectl's byte lines matching re (MiB read, MiB total).
function byteLines(stderr, re) {
  return [...stderr.matchAll(re)].map((m) => ({ read: Number(m[1]), total: Number(m[2]), pct: Number(m[3]) }));
}

// Asks ImageStatus(verbose) every POLL_MS until stop(); resolves every
// answer that carried importProgress (parsed) and the number of calls.
function statusProbe(img) {
  const seen = [];
  let calls = 0;
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const r = await img.ImageStatus({ image: { image: REF }, verbose: true }, { deadlineMs: 60000 });
      calls++;
      if (r.info?.importProgress) seen.push({ image: r.image, p: JSON.parse(r.info.importProgress) });
      await sleep(POLL_MS);
    }
    return { seen, calls };
  })();
  return { stop: () => { stopped = true; return done; } };
}

describe('image import progress in bytes', { skip: skipReason() }, () => {
  let sd;
  let probe;
  let tmp;

  before(async () => {
    sd = await SluicedInstance.start({ label: 'imgpr' });
    tmp = fs.mkdtempSync(path.join(sd.root, 'prog-'));
    probe = await connectCri(sd.endpoint, { ownConnection: true });
  }, { timeout: 120000 });

  after(async () => {
    probe?.close();
    if (sd) await sd.stop();
    await destroyAll(sd);
  }, { timeout: 120000 });

  test('sluicectl image import prints growing byte counts; verbose ImageStatus shows the progress',
    { timeout: 300000 }, async (t) => {
      const staged = path.join(tmp, 'progress.tar');
      writeBigLayout(staged, LAYER_BYTES, REF);
      const total = fs.statSync(staged).size;
      const totalMiB = (total / MIB).toFixed(1);

      const status = statusProbe(probe.image);
      const t0 = Date.now();
      const r = await ctl(['-r', sd.endpoint, '--import-dir', sd.importDir, 'image', 'import',
        '--progress-interval', `${INTERVAL_MS}ms`, staged], { timeoutMs: 280000 });
      const ms = Date.now() - t0;
      const { seen, calls } = await status.stop();
      t.diagnostic(`sluicectl's stderr (${r.stderr.length} bytes): ${r.stderr.trim().split('\n').slice(0, 12).join(' | ')}`);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^Imported ${escape(REF)}: sha256:[0-9a-f]{64}$`, 'm'));

      // sluiced's import, as sluicectl prints it: at least two growing
      // counts below the total, each of the total
      const lines = byteLines(r.stderr,
        new RegExp(`sluicectl: importing ${escape(REF)}: ([\\d.]+) MiB of ([\\d.]+) MiB \\((\\d+)%\\)`, 'g'));
      const below = lines.filter((l) => l.read < l.total);
      t.diagnostic(`import ${ms} ms; ${lines.length} byte lines: ${lines.map((l) => l.read).slice(0, 40).join(', ')} of ${totalMiB} MiB; ` +
        `${calls} ImageStatus calls, ${seen.length} with importProgress`);
      assert.ok(lines.every((l) => l.total.toFixed(1) === totalMiB), r.stderr);
      // (a line per change of the bytes: two may print the same 0.1 MiB)
      assert.ok(new Set(below.map((l) => l.read)).size >= 2, r.stderr);
      for (let i = 1; i < lines.length; i++) assert.ok(lines[i].read >= lines[i - 1].read, r.stderr);
      for (const l of lines) assert.ok(Math.abs(l.pct - (l.read * 100) / l.total) <= 1, JSON.stringify(l));

      // the copy into the import directory: its own byte lines, growing,
      // when it took long enough for some (ten intervals of copying; the
      // fsync after it is not counted)
      const copied = /sluicectl: copied progress\.tar in ([\d.]+) s/.exec(r.stderr);
      assert.ok(copied, r.stderr);
      const copyLines = byteLines(r.stderr, /sluicectl: copying progress\.tar: ([\d.]+) MiB of ([\d.]+) MiB \((\d+)%\)/g);
      t.diagnostic(`copy ${copied[1]} s, ${copyLines.length} copy lines`);
      assert.ok(copyLines.every((l) => l.read < l.total && l.total.toFixed(1) === totalMiB), r.stderr);
      for (let i = 1; i < copyLines.length; i++) assert.ok(copyLines[i].read >= copyLines[i - 1].read, r.stderr);
      if (Number(copied[1]) >= (10 * INTERVAL_MS) / 1000)
        assert.ok(new Set(copyLines.map((l) => l.read)).size >= 2, r.stderr);

      // what the independent client saw: no image yet, and the progress of
      // the copy sluicectl made, never past its size, never going back
      assert.ok(seen.some((s) => s.p.phase === 'reading' && s.p.bytesRead > 0 && s.p.bytesRead < s.p.bytesTotal),
        JSON.stringify(seen.map((s) => s.p)));
      for (const [i, s] of seen.entries()) {
        assert.equal(s.image, null);
        assert.equal(s.p.file, path.join(sd.importDir, 'progress.tar'));
        assert.ok(PHASES.includes(s.p.phase), s.p.phase);
        assert.equal(s.p.bytesTotal, total);
        assert.ok(s.p.bytesRead >= 0 && s.p.bytesRead <= s.p.bytesTotal, JSON.stringify(s.p));
        assert.ok(s.p.secondsElapsed >= 0, JSON.stringify(s.p));
        if (i > 0 && s.p.phase !== 'queued' && seen[i - 1].p.phase !== 'queued')
          assert.ok(s.p.bytesRead >= seen[i - 1].p.bytesRead, JSON.stringify(seen.map((x) => x.p)));
      }

      // the end: the image is there, and a verbose ImageStatus answers it
      // without progress
      const done = await probe.image.ImageStatus({ image: { image: REF }, verbose: true });
      assert.ok(done.image?.id, JSON.stringify(done));
      assert.equal(done.info?.importProgress, undefined);
      assert.ok(Number(done.image.size) >= LAYER_BYTES, `size ${done.image.size}`);

      // sluiced's log: a progress line every 5 s of a longer import
      const inSluiced = /msg="image imported" file=\S*progress\.tar seconds=([\d.]+)/.exec(sd.proc.stderr);
      assert.ok(inSluiced, sd.proc.stderr.slice(-2000));
      const logLines = sd.proc.stderr.split('\n').filter((l) => l.includes('msg="image import progress"'));
      t.diagnostic(`sluiced: ${inSluiced[1]} s, ${logLines.length} progress log lines`);
      if (Number(inSluiced[1]) > 6) {
        assert.ok(logLines.length >= 1, sd.proc.stderr.slice(-2000));
        assert.match(logLines[0], new RegExp(`file=\\S*progress\\.tar read_mib=[\\d.]+ total_mib=${escape(totalMiB)} phase=(reading|unpacking) seconds=\\d+`));
      }
    });

  test('--progress-interval: a bad value is a usage error naming the flag', async () => {
    for (const v of ['0', 'soon', '2h']) {
      const r = await ctl(['-r', sd.endpoint, '--import-dir', sd.importDir, 'image', 'import',
        '--progress-interval', v, path.join(tmp, 'progress.tar')]);
      assert.equal(r.code, 2, `${v}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`--progress-interval: "${v}" is not a duration from 1ms to 1h`));
    }
  });
});
