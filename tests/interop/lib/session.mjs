// A remote-command session over the `ws` package: channel framing (binary
// or base64 text), per-channel collection, and waiting helpers.
import WebSocket from 'ws';

export const CH = { STDIN: 0, STDOUT: 1, STDERR: 2, ERROR: 3, RESIZE: 4, CLOSE: 255 };

export const V5 = 'v5.channel.k8s.io';
export const V4 = 'v4.channel.k8s.io';
export const V4B64 = 'v4.base64.channel.k8s.io';
export const V1 = 'channel.k8s.io';
export const V1B64 = 'base64.channel.k8s.io';

export const SUCCESS_JSON = '{"metadata":{},"status":"Success"}';

export function failureText(code) {
  return `command terminated with non-zero exit code: exit status ${code}`;
}

export function failureJson(code) {
  return (
    '{"metadata":{},"status":"Failure","message":"' + failureText(code) +
    '","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"' +
    code + '"}]}}'
  );
}

const DEFAULT_TIMEOUT_MS = 20000;

// Every client socket still open, so a file's last test can cut the ones a
// failed test left behind (the server must then clean up after them).
const openSockets = new Set();

export function trackSocket(ws) {
  openSockets.add(ws);
  ws.on('close', () => openSockets.delete(ws));
}

export function terminateAll() {
  const n = openSockets.size;
  for (const ws of openSockets) ws.terminate();
  openSockets.clear();
  return n;
}

export class Session {
  constructor(ws, opts) {
    this.ws = ws;
    trackSocket(ws);
    this.base64 = false;
    this.protocol = null;
    this.upgradeHeaders = null;
    // true, false, or a function (channel) => bool: which payloads to keep.
    this.keep = opts.keep === undefined ? true : opts.keep;
    this.sink = opts.sink || null; // (channel, Buffer) for every data message
    this.messages = []; // {channel, data, isBinary}
    this.byChannel = new Map();
    this.waiters = new Set();
    this.error = null;
    this.closeInfo = null;
    this.closed = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.closeInfo = { code, reason: reason.toString() };
        this.poke();
        resolve(this.closeInfo);
      });
    });
    ws.on('error', (e) => {
      this.error = e;
      this.poke();
    });
    ws.on('upgrade', (res) => {
      this.upgradeHeaders = res.headers;
    });
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
  }

  onMessage(data, isBinary) {
    let channel, payload;
    if (this.base64) {
      const s = data.toString('latin1');
      channel = s.charCodeAt(0) - 48;
      payload = Buffer.from(s.slice(1), 'base64');
    } else {
      channel = data[0];
      payload = data.subarray(1);
    }
    const m = { channel, data: payload, isBinary, raw: data, rawLength: data.length };
    if (this.keep === true || (typeof this.keep === 'function' && this.keep(channel))) {
      this.messages.push(m);
      if (!this.byChannel.has(channel)) this.byChannel.set(channel, []);
      this.byChannel.get(channel).push(payload);
    } else {
      this.messages.push({ channel, isBinary, rawLength: data.length, data: null });
    }
    if (this.sink) this.sink(channel, payload);
    this.poke();
  }

  poke() {
    for (const w of [...this.waiters]) w();
  }

  // Everything received on a channel, as one Buffer.
  channel(ch) {
    return Buffer.concat(this.byChannel.get(ch) || []);
  }

  text(ch) {
    return this.channel(ch).toString('utf8');
  }

  // Sends data on a channel in this session's framing.
  send(ch, data) {
    const buf = Buffer.isBuffer(data) ? data : Buffer.from(data);
    if (this.base64)
      this.ws.send(String.fromCharCode(48 + ch) + buf.toString('base64'));
    else
      this.ws.send(Buffer.concat([Buffer.from([ch]), buf]));
  }

  // The v5 CLOSE signal for a channel.
  sendClose(ch) {
    this.ws.send(Buffer.from([CH.CLOSE, ch]));
  }

  sendRaw(buf, opts) {
    this.ws.send(buf, opts);
  }

  resize(width, height) {
    this.send(CH.RESIZE, JSON.stringify({ Width: width, Height: height }));
  }

  // Resolves once pred(this) holds; rejects on timeout or when the socket
  // closes before it does.
  waitFor(pred, what = 'condition', timeoutMs = DEFAULT_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      let timer;
      const check = () => {
        if (pred(this)) {
          done();
          resolve();
        } else if (this.closeInfo) {
          done();
          reject(new Error(`closed (${JSON.stringify(this.closeInfo)}) before ${what}; ` +
            `got ${this.summary()}`));
        }
      };
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${what}; got ${this.summary()}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  // Waits for the close, with a timeout.
  async waitClosed(timeoutMs = DEFAULT_TIMEOUT_MS) {
    let timer;
    const t = new Promise((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no close within ${timeoutMs} ms; got ${this.summary()}`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.closed, t]);
    } finally {
      clearTimeout(timer);
    }
  }

  summary() {
    const chans = [...this.byChannel.keys()].map(
      (c) => `${c}:${JSON.stringify(this.channel(c).toString('latin1').slice(0, 300))}`,
    );
    return `[protocol ${JSON.stringify(this.protocol)}, ${this.messages.length} messages, ` +
      `${chans.join(', ')}, close ${JSON.stringify(this.closeInfo)}, error ${this.error}]`;
  }
}

export class UpgradeRefused extends Error {
  constructor(status, headers, body) {
    super(`upgrade refused: HTTP ${status} ${JSON.stringify(body)}`);
    this.status = status;
    this.headers = headers;
    this.body = body;
  }
}

// Connects; `protocols` undefined/null sends no Sec-WebSocket-Protocol.
// Resolves with an open Session, or rejects with UpgradeRefused for a
// non-101 answer. wsOptions go to the `ws` client (e.g. TLS: ca, cert, key).
export function connect(url, { protocols, keep, sink, timeoutMs = DEFAULT_TIMEOUT_MS,
  wsOptions } = {}) {
  const ws = new WebSocket(url, protocols || [], wsOptions);
  const s = new Session(ws, { keep, sink });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`no WebSocket open within ${timeoutMs} ms`));
    }, timeoutMs);
    ws.on('unexpected-response', (req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () => {
        clearTimeout(timer);
        req.destroy();
        reject(new UpgradeRefused(res.statusCode, res.headers, body));
      });
    });
    ws.on('open', () => {
      clearTimeout(timer);
      s.protocol = ws.protocol;
      s.base64 = ws.protocol.includes('base64');
      resolve(s);
    });
    ws.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

// Connects, runs body(session) (which may send input), then waits for
// the close. Returns the session.
export async function runSession(url, opts = {}, body = async () => {}) {
  const s = await connect(url, opts);
  await body(s);
  await s.waitClosed(opts.timeoutMs);
  return s;
}
