// Tarballs for the image tests, written by hand (ustar headers): an OCI
// image layout with one layer of random (incompressible) data, written in
// one pass whatever its size.
import crypto from 'node:crypto';
import fs from 'node:fs';

const CHUNK = 1 << 20;

export function header(name, size, type = '0') {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100);
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
  h.write(`${Math.floor(Date.now() / 1000).toString(8).padStart(11, '0')}\0`, 136);
  h.write('        ', 148);
  h.write(type, 156);
  h.write('ustar\0' + '00', 257);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return h;
}

export const pad = (n) => Buffer.alloc((512 - (n % 512)) % 512);
export const sha = (b) => crypto.createHash('sha256').update(b).digest('hex');

// Writes out: an OCI layout whose one layer holds /big.bin (bytes of
// random data). The layer goes first under a placeholder name that is
// patched once its digest is known.
export function writeBigLayout(out, bytes, ref) {
  const fd = fs.openSync(out, 'w');
  let pos = 0;
  const put = (b) => { fs.writeSync(fd, b, 0, b.length, pos); pos += b.length; };
  const layerSize = 512 + bytes + pad(bytes).length + 1024;
  const layerHeaderAt = pos;
  put(header(`blobs/sha256/${'0'.repeat(64)}`, layerSize));
  const hash = crypto.createHash('sha256');
  const layerPut = (b) => { hash.update(b); put(b); };
  layerPut(header('big.bin', bytes));
  const buf = Buffer.alloc(CHUNK);
  for (let left = bytes; left > 0; left -= CHUNK) {
    crypto.randomFillSync(buf);
    layerPut(left >= CHUNK ? buf : buf.subarray(0, left));
  }
  layerPut(pad(bytes));
  layerPut(Buffer.alloc(1024));
  put(pad(layerSize));
  const layerHex = hash.digest('hex');
  fs.writeSync(fd, header(`blobs/sha256/${layerHex}`, layerSize), 0, 512, layerHeaderAt);
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch] || process.arch;
  const config = Buffer.from(JSON.stringify({
    architecture: arch, os: 'linux', config: { Cmd: ['/big.bin'] },
    rootfs: { type: 'layers', diff_ids: [`sha256:${layerHex}`] },
  }));
  const manifest = Buffer.from(JSON.stringify({
    schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: `sha256:${sha(config)}`, size: config.length },
    layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: `sha256:${layerHex}`, size: layerSize }],
  }));
  const index = Buffer.from(JSON.stringify({
    schemaVersion: 2,
    manifests: [{
      mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: `sha256:${sha(manifest)}`,
      size: manifest.length,
      annotations: { 'io.containerd.image.name': ref, 'org.opencontainers.image.ref.name': '1' },
    }],
  }));
  const file = (name, b) => { put(header(name, b.length)); put(b); put(pad(b.length)); };
  file(`blobs/sha256/${sha(config)}`, config);
  file(`blobs/sha256/${sha(manifest)}`, manifest);
  file('oci-layout', Buffer.from('{"imageLayoutVersion":"1.0.0"}'));
  file('index.json', index);
  put(Buffer.alloc(1024));
  fs.closeSync(fd);
}
