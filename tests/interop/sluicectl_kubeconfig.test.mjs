// sluicectl kubeconfig prints what sluice-kube --print-kubeconfig prints for
// the same flags, and kubectl accepts it (no server needed: `config view`).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ctl = process.env.SLUICECTL || path.join(repo, 'build/src/sluicectl/sluicectl');
const front = process.env.SLUICE_KUBE || path.join(repo, 'build/src/sluice-kube/sluice-kube');

test('sluicectl kubeconfig = sluice-kube --print-kubeconfig, and kubectl reads it', () => {
  const args = ['--port', '16444', '--token', 'tok-123'];
  const fromCtl = execFileSync(ctl, ['kubeconfig', ...args], { encoding: 'utf8' });
  const fromFront = execFileSync(front, ['--print-kubeconfig', ...args], { encoding: 'utf8' });
  assert.equal(fromCtl, fromFront);
  assert.match(fromCtl, /server: http:\/\/127\.0\.0\.1:16444/);
  assert.match(fromCtl, /token: tok-123/);
  const dir = mkdtempSync(path.join(tmpdir(), 'sl-kc-'));
  const file = path.join(dir, 'config');
  writeFileSync(file, fromCtl);
  const view = execFileSync('kubectl', ['config', 'view', '--raw', '-o', 'jsonpath={.clusters[0].cluster.server}'],
    { encoding: 'utf8', env: { ...process.env, KUBECONFIG: file } });
  rmSync(dir, { recursive: true });
  assert.equal(view, 'http://127.0.0.1:16444');
});
