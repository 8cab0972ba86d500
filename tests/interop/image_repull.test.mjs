// PullImage from the import directory after RemoveImage: a tag removed
// from an image that keeps another tag comes back on the next pull of that
// tag, although its tarball and image are unchanged (the tarball is
// imported again); a removal stays until such a pull.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { status as grpcStatus } from './lib/cri.mjs';
import { busyboxImageTar, destroyAll, SluicedInstance, skipReason } from './lib/sluiced.mjs';

const LATEST = 'localhost/sluice/busybox:latest';
const SECOND = 'localhost/sluice/busybox:second';

// The busybox OCI tarball with its busybox manifest listed a second time
// under SECOND: one image, two tags, from one file.
function twoTagTar(out) {
  const dir = fs.mkdtempSync(path.join(path.dirname(out), 'layout-'));
  const tar = (args) => {
    const r = spawnSync('tar', args, { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`tar ${args.join(' ')}: ${r.stderr}`);
  };
  tar(['-xf', busyboxImageTar(), '-C', dir]);
  const file = path.join(dir, 'index.json');
  const index = JSON.parse(fs.readFileSync(file, 'utf8'));
  const bb = index.manifests.find((m) => m.annotations['io.containerd.image.name'] === LATEST);
  index.manifests.push({
    ...bb,
    annotations: { 'io.containerd.image.name': SECOND, 'org.opencontainers.image.ref.name': 'second' },
  });
  fs.writeFileSync(file, JSON.stringify(index));
  tar(['-cf', out, '-C', dir, 'oci-layout', 'index.json', 'blobs']);
  fs.rmSync(dir, { recursive: true, force: true });
}

describe('re-pull of a removed tag from the import directory', { skip: skipReason() }, () => {
  let sd;

  before(async () => {
    sd = await SluicedInstance.start({ label: 'repull' });
    twoTagTar(path.join(sd.importDir, 'two-tags.tar'));
  }, { timeout: 120000 });

  after(async () => {
    if (sd) await sd.stop();
    await destroyAll(sd);
  }, { timeout: 120000 });

  const status = async (image) => (await sd.img.ImageStatus({ image: { image } })).image;

  test('RemoveImage of one tag, then PullImage of it: back, same image', async () => {
    const pulled = await sd.img.PullImage({ image: { image: SECOND } });
    const img = await status(SECOND);
    assert.equal(pulled.image_ref, img.id);
    assert.ok(img.repo_tags.includes(LATEST) && img.repo_tags.includes(SECOND), img.repo_tags);

    await sd.img.RemoveImage({ image: { image: SECOND } });
    assert.equal(await status(SECOND), null);
    assert.equal((await status(LATEST)).id, img.id, 'the image stays under its other tag');

    const again = await sd.img.PullImage({ image: { image: SECOND } });
    assert.equal(again.image_ref, img.id);
    assert.deepEqual((await status(SECOND)).repo_tags.sort(), [LATEST, SECOND].sort());

    const pod = await sd.runPod('repull', { hostNetwork: true });
    const c = await sd.runContainer(pod, 'c', { image: SECOND, command: ['sleep', '60'] });
    const out = await sd.execSync(c, ['cat', '/etc/passwd']);
    assert.equal(out.exit_code, 0);
    assert.match(out.stdout.toString(), /^root:/);
  });

  test('a tag no tarball gives is still NOT_FOUND', async () => {
    await assert.rejects(sd.img.PullImage({ image: { image: 'localhost/sluice/busybox:none' } }),
      (err) => err.code === grpcStatus.NOT_FOUND && /busybox:none/.test(err.details));
  });
});
