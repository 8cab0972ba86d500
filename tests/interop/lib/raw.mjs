// Raw TCP peers: hand-written HTTP requests and WebSocket frames, for the
// inputs that a well-behaved client library refuses to produce.
import { randomBytes, createHash } from 'node:crypto';
import net from 'node:net';

const RAW_TIMEOUT_MS = 15000;

// Parses "HTTP/1.1 NNN Reason\r\nName: v\r\n...\r\n\r\n"; null if incomplete.
export function parseHead(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) (.*)$/.exec(lines[0]);
  if (!m) throw new Error(`bad status line ${JSON.stringify(lines[0])}`);
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(m[1]), reason: m[2], headers, rest: buf.subarray(end + 4) };
}

// Writes `request` (string or Buffer, sent as is) and reads the answer
// until the server closes. Resolves {status, reason, headers, body}.
export function rawRequest(port, request, { timeoutMs = RAW_TIMEOUT_MS } = {}) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const chunks = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no complete answer in ${timeoutMs} ms; got ` +
        JSON.stringify(Buffer.concat(chunks).toString('latin1'))));
    }, timeoutMs);
    sock.on('connect', () => sock.write(request));
    sock.on('data', (d) => chunks.push(d));
    // The server may reset after answering if we were still sending.
    sock.on('error', () => {});
    sock.on('close', () => {
      clearTimeout(timer);
      const all = Buffer.concat(chunks);
      let h;
      try {
        h = parseHead(all);
      } catch (e) {
        reject(e);
        return;
      }
      if (!h) {
        reject(new Error(`connection closed without an answer; got ${JSON.stringify(all.toString('latin1'))}`));
        return;
      }
      resolve({ status: h.status, reason: h.reason, headers: h.headers,
        body: h.rest.toString('latin1') });
    });
  });
}

// A plain GET (optionally with extra header lines) as a raw string.
export function getRequest(path, extra = [], method = 'GET') {
  return [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...extra, '', ''].join('\r\n');
}

export function wsHeaders({ key, version = '13', protocols } = {}) {
  const h = ['Upgrade: websocket', 'Connection: Upgrade', `Sec-WebSocket-Key: ${key}`,
    `Sec-WebSocket-Version: ${version}`];
  if (protocols) h.push(`Sec-WebSocket-Protocol: ${protocols.join(', ')}`);
  return h;
}

export function acceptFor(key) {
  return createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
}

// Parses server frames (unmasked) from buf; returns {frames, rest}.
export function parseFrames(buf) {
  const frames = [];
  let off = 0;
  for (;;) {
    if (buf.length - off < 2) break;
    const b0 = buf[off], b1 = buf[off + 1];
    let len = b1 & 0x7f, hl = 2;
    if (b1 & 0x80) throw new Error('server frame is masked');
    if (len === 126) {
      if (buf.length - off < 4) break;
      len = buf.readUInt16BE(off + 2);
      hl = 4;
    } else if (len === 127) {
      if (buf.length - off < 10) break;
      len = Number(buf.readBigUInt64BE(off + 2));
      hl = 10;
    }
    if (buf.length - off < hl + len) break;
    frames.push({ fin: !!(b0 & 0x80), opcode: b0 & 0x0f,
      payload: buf.subarray(off + hl, off + hl + len) });
    off += hl + len;
  }
  return { frames, rest: buf.subarray(off) };
}

// Builds one client frame; masked unless mask === false.
export function frame(opcode, payload, { fin = true, mask = true } = {}) {
  const p = Buffer.from(payload);
  const len = p.length;
  const head = [(fin ? 0x80 : 0) | opcode];
  const m = mask ? 0x80 : 0;
  if (len < 126) head.push(m | len);
  else if (len < 65536) head.push(m | 126, len >> 8, len & 0xff);
  else throw new Error('frame(): payloads >= 64 KiB not needed here');
  const parts = [Buffer.from(head)];
  if (mask) {
    const key = randomBytes(4);
    parts.push(key);
    const masked = Buffer.alloc(len);
    for (let i = 0; i < len; i++) masked[i] = p[i] ^ key[i & 3];
    parts.push(masked);
  } else {
    parts.push(p);
  }
  return Buffer.concat(parts);
}

// A WebSocket on a bare socket: does the handshake by hand, then collects
// server frames. `path` is the URL path (/exec/TOKEN).
export class RawWs {
  static open(port, path, { protocols } = {}) {
    return new Promise((resolve, reject) => {
      const key = randomBytes(16).toString('base64');
      const sock = net.connect(port, '127.0.0.1');
      let buf = Buffer.alloc(0);
      const timer = setTimeout(() => {
        sock.destroy();
        reject(new Error('raw handshake timed out'));
      }, RAW_TIMEOUT_MS);
      const onData = (d) => {
        buf = Buffer.concat([buf, d]);
        const h = parseHead(buf);
        if (!h) return;
        clearTimeout(timer);
        sock.off('data', onData);
        if (h.status !== 101) {
          sock.destroy();
          reject(new Error(`raw handshake got ${h.status}`));
          return;
        }
        if (h.headers['sec-websocket-accept'] !== acceptFor(key)) {
          sock.destroy();
          reject(new Error(`bad Sec-WebSocket-Accept ${h.headers['sec-websocket-accept']}`));
          return;
        }
        resolve(new RawWs(sock, h));
      };
      sock.on('data', onData);
      sock.on('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
      sock.on('connect', () => sock.write(getRequest(path, wsHeaders({ key, protocols }))));
    });
  }

  constructor(sock, head) {
    this.sock = sock;
    this.headers = head.headers;
    this.buf = head.rest;
    this.frames = [];
    this.ended = false;
    this.waiters = new Set();
    this.take();
    sock.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.take();
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      this.ended = true;
      this.poke();
    });
  }

  take() {
    const { frames, rest } = parseFrames(this.buf);
    this.buf = rest;
    this.frames.push(...frames);
    this.poke();
  }

  poke() {
    for (const w of [...this.waiters]) w();
  }

  write(bytes) {
    this.sock.write(bytes);
  }

  closeFrame() {
    return this.frames.find((f) => f.opcode === 8);
  }

  // Resolves with the server's close frame {code, reason}; rejects if the
  // connection ends without one or nothing comes in time.
  waitCloseFrame(timeoutMs = RAW_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      let timer;
      const check = () => {
        const f = this.closeFrame();
        if (f) {
          done();
          resolve({ code: f.payload.length >= 2 ? f.payload.readUInt16BE(0) : null,
            reason: f.payload.subarray(2).toString('utf8') });
        } else if (this.ended) {
          done();
          reject(new Error(`connection ended without a close frame; frames ${this.describe()}`));
        }
      };
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      timer = setTimeout(() => {
        done();
        reject(new Error(`no close frame in ${timeoutMs} ms; frames ${this.describe()}`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  // Resolves once the server has closed the TCP connection.
  waitEnd(timeoutMs = RAW_TIMEOUT_MS) {
    return new Promise((resolve, reject) => {
      let timer;
      const check = () => {
        if (!this.ended) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`server kept the connection open for ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }

  describe() {
    return JSON.stringify(this.frames.map((f) => [f.opcode, f.payload.toString('latin1').slice(0, 80)]));
  }

  destroy() {
    this.sock.destroy();
  }
}
