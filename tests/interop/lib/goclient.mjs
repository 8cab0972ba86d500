// Runs the Go SPDY reference client (tests/interop/go/spdyclient, on
// Debian's spdystream; docs/interop-peers.md §B). The binary comes from
// $SLUICE_SPDYCLIENT, else <repo>/build-go/spdyclient, built on demand with
// scripts/go-client. Without go (or spdystream) the tests skip with a reason.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { REPO } from './hostd.mjs';

export const SPDYCLIENT = process.env.SLUICE_SPDYCLIENT
  ? path.resolve(process.env.SLUICE_SPDYCLIENT)
  : path.join(REPO, 'build-go/spdyclient');

// The client's exit statuses (tests/interop/go/spdyclient/main.go).
export const EXIT = { OK: 0, REMOTE: 1, USAGE: 2, TIMEOUT: 124, UPGRADE: 125, CONN: 126 };

const DEFAULT_TIMEOUT_MS = 30000;
// What a test may keep of a stream it does not hash.
const MAX_KEEP = 4 * 1024 * 1024;

let cached; // {path} or {skip}

// Returns {path} when the client is (or could be made) available, else
// {skip: reason}. Builds once per process.
export function ensureGoClient() {
  if (cached) return cached;
  if (existsSync(SPDYCLIENT)) {
    cached = { path: SPDYCLIENT };
    return cached;
  }
  if (process.env.SLUICE_SPDYCLIENT) {
    cached = { skip: `SLUICE_SPDYCLIENT=${SPDYCLIENT} does not exist` };
    return cached;
  }
  if (spawnSync('go', ['version'], { stdio: 'ignore' }).error) {
    cached = { skip: 'go is not installed (apt-get install golang-go golang-github-docker-spdystream-dev)' };
    return cached;
  }
  const r = spawnSync(path.join(REPO, 'scripts/go-client'), [path.join(REPO, 'build-go')], {
    cwd: REPO,
    encoding: 'utf8',
  });
  if (r.status !== 0 || !existsSync(SPDYCLIENT))
    cached = { skip: `scripts/go-client failed (${r.status}): ${(r.stderr || '').trim()}` };
  else
    cached = { path: SPDYCLIENT };
  return cached;
}

// For node:test's `skip` option: false when usable, else the reason.
export function goClientSkip() {
  const c = ensureGoClient();
  return c.skip ? c.skip : false;
}

// Runs `spdyclient args...`. opts:
//   input:  Buffer/string written to stdin then closed; or a function
//           (writable) that writes and ends it itself; default: stdin closed
//   hashStdout: true to keep only {bytes, sha256} of stdout (big transfers)
//   timeoutMs: SIGKILL after this long (the result then has killed: true)
//   env: extra environment
// Resolves {code, signal, stdout (Buffer), stdoutBytes, stdoutSha256,
// stderr (string), killed}.
export function runGoClient(args, opts = {}) {
  const c = ensureGoClient();
  if (c.skip) throw new Error(`spdyclient unavailable: ${c.skip}`);
  const proc = spawn(c.path, args, {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...(opts.env || {}) },
  });
  return collect(proc, opts);
}

function collect(proc, opts) {
  const hash = opts.hashStdout ? createHash('sha256') : null;
  const out = [];
  let outBytes = 0;
  let err = '';
  let killed = false;
  proc.stdout.on('data', (d) => {
    outBytes += d.length;
    if (hash) hash.update(d);
    else if (outBytes <= MAX_KEEP) out.push(d);
  });
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d) => {
    if (err.length < MAX_KEEP) err += d;
  });
  // The client may exit before reading all we write (an error case).
  proc.stdin.on('error', () => {});
  feed(proc.stdin, opts.input);
  const timer = setTimeout(() => {
    killed = true;
    proc.kill('SIGKILL');
  }, opts.timeoutMs || DEFAULT_TIMEOUT_MS);
  return new Promise((resolve, reject) => {
    proc.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        killed,
        stdout: Buffer.concat(out),
        stdoutBytes: outBytes,
        stdoutSha256: hash ? hash.digest('hex') : null,
        stderr: err,
      });
    });
  });
}

function feed(stdin, input) {
  if (typeof input === 'function') input(stdin);
  else if (input === undefined || input === null) stdin.end();
  else stdin.end(input);
}

// Starts a long-lived client (pf-listen) and resolves once it printed its
// "Forwarding from 127.0.0.1:L -> R" lines: {proc, ports: [L...], done}
// where done resolves like runGoClient once it exits.
export async function startGoClient(args, { lines = 1, timeoutMs = 15000 } = {}) {
  const c = ensureGoClient();
  if (c.skip) throw new Error(`spdyclient unavailable: ${c.skip}`);
  const proc = spawn(c.path, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  let err = '';
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (d) => {
    if (err.length < MAX_KEEP) err += d;
  });
  const done = new Promise((resolve) => {
    proc.on('close', (code, signal) => resolve({ code, signal, stdout: text, stderr: err }));
  });
  const ports = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`no "Forwarding from" line in ${timeoutMs} ms; stderr: ${err}`));
    }, timeoutMs);
    proc.stdout.setEncoding('utf8');
    proc.stdout.on('data', (d) => {
      text += d;
      const got = [...text.matchAll(/^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)$/gm)];
      if (got.length >= lines) {
        clearTimeout(timer);
        resolve(got.map((m) => Number(m[1])));
      }
    });
    done.then((r) => {
      clearTimeout(timer);
      reject(new Error(`spdyclient exited early: ${JSON.stringify(r)}`));
    });
  });
  return { proc, ports, done, stderr: () => err };
}

const PATTERN_CHUNK = 256 * 1024;
const PATTERN_BASE = 1 << 20;

// Writes `total` bytes of varied (non-repeating per chunk) data to a
// writable, respecting back-pressure, then ends it unless keepOpen.
// Resolves {bytes, sha256} of what was written.
export async function pumpPattern(writable, total, { keepOpen = false } = {}) {
  const base = randomBytes(PATTERN_BASE + PATTERN_CHUNK);
  const hash = createHash('sha256');
  let off = 0;
  for (let i = 0; off < total; i++) {
    const n = Math.min(PATTERN_CHUNK, total - off);
    const start = (i * 7919) % PATTERN_BASE;
    const chunk = base.subarray(start, start + n);
    hash.update(chunk);
    off += n;
    if (!writable.write(chunk)) {
      await new Promise((resolve, reject) => {
        const onDrain = () => {
          writable.off('close', onClose);
          resolve();
        };
        const onClose = () => {
          writable.off('drain', onDrain);
          reject(new Error(`the reader went away after ${off} of ${total} bytes`));
        };
        writable.once('drain', onDrain);
        writable.once('close', onClose);
      });
    }
  }
  if (!keepOpen) writable.end();
  return { bytes: off, sha256: hash.digest('hex') };
}
