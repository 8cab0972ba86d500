// A full log disk (issue 13 item 5): the pod's log_directory is a 1 MiB
// tmpfs that a filler file then fills up while the container writes
// numbered lines. The CRI log must hold only whole records (never a line
// cut mid-way), the records that could not be written are counted and
// reported (the monitor's log, sluiced's log, ContainerStatus verbose
// info), the count matches the line numbers missing from the log, the
// container is never held up, and logging resumes once space returns.
// sluiced's /metrics counts the dropped bytes and records (totals and per
// container), moving while the disk is still full.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SluicedInstance, skipReason, sleep } from './lib/sluiced.mjs';

const PAD = 'x'.repeat(100);
const RECORD = new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z stdout F line (\\d+) ${PAD}$`);

// sluiced's /metrics text.
function metrics(port) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { body += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(body)
        : reject(new Error(`/metrics: ${res.statusCode}`))));
    }).on('error', reject);
  });
}

// The value of the sample line `name{labels} V` (labels: the exact text), or null.
function sample(text, name, labels = '') {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line === undefined ? null : Number(line.slice(name.length + labels.length + 1));
}

describe('the CRI log on a full disk', { skip: skipReason(), timeout: 120000 }, () => {
  let sd;
  let mnt;
  let mounted = false;

  before(async () => {
    sd = await SluicedInstance.start({ label: 'logful', args: ['--admin-listen', '127.0.0.1:0'] });
    mnt = path.join(sd.root, 'full');
    fs.mkdirSync(mnt);
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt], { encoding: 'utf8' });
    assert.equal(r.status, 0, `mount tmpfs: ${r.stderr}`);
    mounted = true;
  }, { timeout: 60000 });

  after(async () => {
    if (sd) await sd.removeAllPods().catch(() => {}); // the monitor lets go of the log
    if (mounted) spawnSync('umount', ['-l', mnt]);
    if (sd) await sd.stop();
  }, { timeout: 60000 });

  test('whole records only, drops counted and reported, logging resumes when space returns',
    async (t) => {
      const config = sd.podConfig('logful', { hostNetwork: true });
      config.log_directory = mnt;
      const { pod_sandbox_id: podId } = await sd.rt.RunPodSandbox({ config });
      sd.podIds.add(podId);
      // about 1500 lines (190 KiB of records) a second, numbered
      const ctr = await sd.runContainer({ id: podId, config }, 'w', {
        command: ['sh', '-c', `i=0; while :; do i=$((i+1)); echo "line $i ${PAD}"; ` +
          '[ $((i % 15)) = 0 ] && usleep 10000; done'],
      });
      const log = path.join(mnt, 'w.log');
      await sleep(500);
      // fill what is left of the tmpfs
      const filler = path.join(mnt, 'filler');
      const fd = fs.openSync(filler, 'w');
      const block = Buffer.alloc(4096, 0x66);
      for (;;) {
        try {
          fs.writeSync(fd, block);
        } catch (e) {
          assert.equal(e.code, 'ENOSPC');
          break;
        }
      }
      fs.closeSync(fd);
      const dropLine = /msg="CRI log cannot be written: dropping whole records" container=(\w+) path=(\S+) error="No space left on device" dropped_bytes=(\d+) dropped_records=(\d+)/;
      for (let i = 0; i < 100 && !dropLine.test(sd.proc.stderr); i++) await sleep(50);
      assert.match(sd.proc.stderr, dropLine);
      const m = dropLine.exec(sd.proc.stderr);
      assert.equal(m[1], ctr);
      assert.equal(m[2], log);
      await sleep(1500); // lines go on being dropped
      const ready = /msg="sluiced ready".* admin=http:\/\/127\.0\.0\.1:(\d+)\//.exec(sd.proc.stderr);
      assert.ok(ready, 'the ready line names the admin listener');
      const adminPort = Number(ready[1]);
      // while still full, the counter has moved past the first report (the
      // monitor updates sluiced at least every second while it drops)
      const during = sample(await metrics(adminPort), 'sluice_log_dropped_bytes_total');
      assert.ok(during > Number(m[3]), `${during} bytes counted while full, ${m[3]} at the first report`);
      fs.rmSync(filler);
      const backLine = /msg="CRI log can be written again" container=(\w+) path=(\S+) dropped_bytes=(\d+) dropped_records=(\d+)/;
      for (let i = 0; i < 100 && !backLine.test(sd.proc.stderr); i++) await sleep(50);
      assert.match(sd.proc.stderr, backLine);
      const [, , , bytes, records] = backLine.exec(sd.proc.stderr).map((x, i) => (i >= 3 ? Number(x) : x));
      await sleep(500);
      await sd.rt.StopContainer({ container_id: ctr, timeout: 1 });
      await sd.waitState(ctr, 'CONTAINER_EXITED');

      // every line of the file is one whole record; the numbers that are
      // missing are exactly the dropped records
      const text = fs.readFileSync(log, 'utf8');
      assert.ok(text.endsWith('\n'), 'the file ends with a whole record');
      const nums = text.slice(0, -1).split('\n').map((l) => {
        const r = RECORD.exec(l);
        assert.ok(r, `not a whole record: ${JSON.stringify(l.slice(0, 200))}`);
        return Number(r[1]);
      });
      let missing = 0;
      let gaps = 0;
      for (let i = 1; i < nums.length; i++) {
        assert.ok(nums[i] > nums[i - 1], 'in order');
        if (nums[i] !== nums[i - 1] + 1) gaps++;
        missing += nums[i] - nums[i - 1] - 1;
      }
      assert.equal(nums[0], 1);
      assert.ok(gaps >= 1, 'some lines were dropped');
      assert.ok(missing >= records, `${missing} lines missing, ${records} reported while full`);
      // lines after the gap: logging resumed and the writer was never held
      const last = nums[nums.length - 1];
      assert.ok(last - nums.findLast((n, i) => i > 0 && n !== nums[i - 1] + 1) > 100,
        'many lines logged after space returned');
      // the monitor's log says the same, and the status record keeps the totals
      // (the monitor's own log sits with the pod's state)
      const monLog = fs.readFileSync(path.join(sd.stateDir, 'pods', podId, 'mon.log'), 'utf8');
      assert.match(monLog, /dropping whole records until it can be written/);
      assert.match(monLog, new RegExp(`can be written again; \\d+ bytes \\(${records} records\\) were dropped`));
      const st = await sd.rt.ContainerStatus({ container_id: ctr, verbose: true });
      const info = JSON.parse(st.info.info);
      assert.equal(info.logDroppedRecords, missing, 'the status record counts every missing line');
      assert.ok(info.logDroppedBytes >= bytes);
      // /metrics: the totals are what the status record holds (one container)
      const page = await metrics(adminPort);
      assert.equal(sample(page, 'sluice_log_dropped_records_total'), missing);
      assert.equal(sample(page, 'sluice_log_dropped_bytes_total'), info.logDroppedBytes);
      assert.equal(sample(page, 'sluice_container_log_dropped_bytes_total',
        `{pod="${podId}",container="${ctr}"}`), info.logDroppedBytes);
      assert.match(page, /^# TYPE sluice_log_dropped_bytes_total counter$/m);
      t.diagnostic(`dropped: ${missing} records, ${info.logDroppedBytes} bytes; ` +
        `/metrics while full: ${during} bytes (first report: ${m[3]})`);
      const recordBytes = text.length / nums.length; // within a few bytes of each other here
      assert.ok(Math.abs(info.logDroppedBytes - missing * recordBytes) <= missing * 8,
        `${info.logDroppedBytes} bytes for ${missing} records of ~${recordBytes}`);
    });
});
