// Raw SPDY/3 for Node (protocol notes §4): frames, Name/Value blocks, the
// shared zlib contexts with the SPDY/3 dictionary, a hand-written upgrade
// request and a frame-level peer. For inputs a real client never sends;
// nothing here hides a frame from the test.
import assert from 'node:assert/strict';
import net from 'node:net';
import zlib from 'node:zlib';

export const TYPE = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  NOOP: 5,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
  CREDENTIAL: 10,
};
export const TYPE_NAME = Object.fromEntries(Object.entries(TYPE).map(([k, v]) => [v, k]));

export const RST = {
  PROTOCOL_ERROR: 1,
  INVALID_STREAM: 2,
  REFUSED_STREAM: 3,
  UNSUPPORTED_VERSION: 4,
  CANCEL: 5,
  INTERNAL_ERROR: 6,
  FLOW_CONTROL_ERROR: 7,
  STREAM_IN_USE: 8,
  STREAM_ALREADY_CLOSED: 9,
  INVALID_CREDENTIALS: 10,
  FRAME_TOO_LARGE: 11,
};
export const GOAWAY = { OK: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2 };
export const FLAG_FIN = 0x01;
export const FLAG_UNIDIRECTIONAL = 0x02;

// ---- the SPDY/3 header dictionary (draft 3 §2.6.10.1) ----
// Length-prefixed header names, then common values with no prefix.
const DICT_NAMES = [
  'options', 'head', 'post', 'put', 'delete', 'trace', 'accept', 'accept-charset',
  'accept-encoding', 'accept-language', 'accept-ranges', 'age', 'allow', 'authorization',
  'cache-control', 'connection', 'content-base', 'content-encoding', 'content-language',
  'content-length', 'content-location', 'content-md5', 'content-range', 'content-type', 'date',
  'etag', 'expect', 'expires', 'from', 'host', 'if-match', 'if-modified-since', 'if-none-match',
  'if-range', 'if-unmodified-since', 'last-modified', 'location', 'max-forwards', 'pragma',
  'proxy-authenticate', 'proxy-authorization', 'range', 'referer', 'retry-after', 'server', 'te',
  'trailer', 'transfer-encoding', 'upgrade', 'user-agent', 'vary', 'via', 'warning',
  'www-authenticate', 'method', 'get', 'status', '200 OK', 'version', 'HTTP/1.1', 'url', 'public',
  'set-cookie', 'keep-alive', 'origin',
];
const DICT_TAIL =
  '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
  '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request' +
  '401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented' +
  '503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 ' +
  'Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,' +
  'application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=' +
  'gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.';
export const DICT_LEN = 1423;
export const DICT_ADLER32 = 0xe3c6a7c2;

export function adler32(buf) {
  let a = 1;
  let b = 0;
  for (const byte of buf) {
    a = (a + byte) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

export const DICT = (() => {
  const parts = [];
  for (const n of DICT_NAMES) {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(n.length);
    parts.push(len, Buffer.from(n, 'latin1'));
  }
  parts.push(Buffer.from(DICT_TAIL, 'latin1'));
  const d = Buffer.concat(parts);
  if (d.length !== DICT_LEN || adler32(d) !== DICT_ADLER32)
    throw new Error(`SPDY dictionary is wrong: ${d.length} bytes, adler ${adler32(d).toString(16)}`);
  return d;
})();

// ---- frames ----

function u32(v) {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return b;
}

// Any control frame; version and length can be forced for bad input.
export function controlFrame(type, flags, payload = Buffer.alloc(0), { version = 3, length } = {}) {
  const h = Buffer.alloc(8);
  h.writeUInt16BE(0x8000 | version);
  h.writeUInt16BE(type, 2);
  h.writeUInt32BE(((flags & 0xff) << 24 | ((length ?? payload.length) & 0xffffff)) >>> 0, 4);
  return Buffer.concat([h, payload]);
}

export function dataFrame(id, payload = Buffer.alloc(0), flags = 0) {
  const h = Buffer.alloc(8);
  h.writeUInt32BE(id & 0x7fffffff);
  h.writeUInt32BE(((flags & 0xff) << 24 | payload.length) >>> 0, 4);
  return Buffer.concat([h, Buffer.from(payload)]);
}

export function synStreamFrame(id, block, flags = 0, { assoc = 0, priority = 0 } = {}) {
  const p = Buffer.alloc(10);
  p.writeUInt32BE(id >>> 0);
  p.writeUInt32BE(assoc >>> 0, 4);
  p[8] = (priority & 7) << 5;
  return controlFrame(TYPE.SYN_STREAM, flags, Buffer.concat([p, block]));
}

export const rstFrame = (id, status) =>
  controlFrame(TYPE.RST_STREAM, 0, Buffer.concat([u32(id), u32(status)]));
export const pingFrame = (id) => controlFrame(TYPE.PING, 0, u32(id));
export const goawayFrame = (last, status) =>
  controlFrame(TYPE.GOAWAY, 0, Buffer.concat([u32(last), u32(status)]));
export const windowUpdateFrame = (id, delta) =>
  controlFrame(TYPE.WINDOW_UPDATE, 0, Buffer.concat([u32(id), u32(delta)]));
export function settingsFrame(entries, flags = 0) {
  const parts = [u32(entries.length)];
  for (const [id, value, f = 0] of entries) parts.push(u32(((f & 0xff) << 24 | id) >>> 0), u32(value));
  return controlFrame(TYPE.SETTINGS, flags, Buffer.concat(parts));
}

// ---- Name/Value blocks (SPDY/3: 32-bit lengths) ----

// pairs: [[name, value], ...] or {name: value}; values are strings/Buffers.
export function encodeNV(pairs) {
  const list = Array.isArray(pairs) ? pairs : Object.entries(pairs);
  const parts = [u32(list.length)];
  for (const [n, v] of list) {
    const nb = Buffer.from(n, 'latin1');
    const vb = Buffer.isBuffer(v) ? v : Buffer.from(String(v), 'latin1');
    parts.push(u32(nb.length), nb, u32(vb.length), vb);
  }
  return Buffer.concat(parts);
}

export function decodeNV(buf) {
  const n = buf.readUInt32BE(0);
  const out = [];
  let o = 4;
  for (let i = 0; i < n; i++) {
    const nl = buf.readUInt32BE(o);
    const name = buf.subarray(o + 4, o + 4 + nl).toString('latin1');
    o += 4 + nl;
    const vl = buf.readUInt32BE(o);
    out.push([name, buf.subarray(o + 4, o + 4 + vl).toString('latin1')]);
    o += 4 + vl;
  }
  if (o !== buf.length) throw new Error(`NV block: ${buf.length - o} trailing bytes`);
  return out;
}

// One zlib context per direction for the life of a session: every block
// ends with a sync flush, so each frame's bytes stand alone on the wire.
class ZContext {
  constructor(z) {
    this.z = z;
    this.failed = null;
    z.on('error', (e) => {
      this.failed = e;
    });
    this.chain = Promise.resolve();
  }

  run(buf) {
    const step = this.chain.then(() => new Promise((resolve, reject) => {
      if (this.failed) {
        reject(this.failed);
        return;
      }
      this.z.write(buf, (err) => {
        if (err || this.failed) {
          reject(err || this.failed);
          return;
        }
        const chunks = [];
        let c;
        while ((c = this.z.read()) !== null) chunks.push(c);
        resolve(Buffer.concat(chunks));
      });
    }));
    this.chain = step.catch(() => {});
    return step;
  }

  close() {
    this.z.destroy();
  }
}

export class Deflater extends ZContext {
  constructor(level = 9) {
    super(zlib.createDeflate({ level, dictionary: DICT, flush: zlib.constants.Z_SYNC_FLUSH }));
  }

  compress(buf) {
    return this.run(buf);
  }
}

export class Inflater extends ZContext {
  constructor() {
    super(zlib.createInflate({ dictionary: DICT, flush: zlib.constants.Z_SYNC_FLUSH }));
  }

  inflate(buf) {
    return this.run(buf);
  }
}

// ---- parsing ----

// Frame objects: {control, version, type, typeName, flags, length, payload}
// plus per type: streamId, status, pingId, lastGoodId, delta, block.
export function parseFrame(buf) {
  if (buf.length < 8) return null;
  const len = buf.readUInt32BE(4) & 0xffffff;
  if (buf.length < 8 + len) return null;
  const flags = buf[4];
  const payload = buf.subarray(8, 8 + len);
  let f;
  if (buf[0] & 0x80) {
    const type = buf.readUInt16BE(2);
    f = { control: true, version: buf.readUInt16BE(0) & 0x7fff, type, typeName: TYPE_NAME[type] || `type${type}`, flags, length: len, payload };
    const w = (o) => (payload.length >= o + 4 ? payload.readUInt32BE(o) : undefined);
    if (type === TYPE.SYN_STREAM) Object.assign(f, { streamId: w(0) & 0x7fffffff, block: payload.subarray(10) });
    else if (type === TYPE.SYN_REPLY || type === TYPE.HEADERS) Object.assign(f, { streamId: w(0) & 0x7fffffff, block: payload.subarray(4) });
    else if (type === TYPE.RST_STREAM) Object.assign(f, { streamId: w(0) & 0x7fffffff, status: w(4) });
    else if (type === TYPE.PING) f.pingId = w(0);
    else if (type === TYPE.GOAWAY) Object.assign(f, { lastGoodId: w(0) & 0x7fffffff, status: w(4) });
    else if (type === TYPE.WINDOW_UPDATE) Object.assign(f, { streamId: w(0) & 0x7fffffff, delta: w(4) & 0x7fffffff });
  } else {
    f = { control: false, streamId: buf.readUInt32BE(0) & 0x7fffffff, flags, length: len, payload, typeName: 'DATA' };
  }
  f.raw = buf.subarray(0, 8 + len);
  return f;
}

export function describeFrame(f) {
  if (f.closed) return 'connection closed';
  if (!f.control)
    return `DATA id=${f.streamId} flags=${f.flags} len=${f.length}` +
      (f.length <= 200 ? ` ${JSON.stringify(f.payload.toString('latin1'))}` : '');
  const bits = [`${f.typeName} v${f.version} flags=${f.flags} len=${f.length}`];
  for (const k of ['streamId', 'lastGoodId', 'status', 'pingId', 'delta'])
    if (f[k] !== undefined) bits.push(`${k}=${f[k]}`);
  if (f.headers) bits.push(`headers=${JSON.stringify(f.headers)}`);
  return bits.join(' ');
}

// ---- HTTP upgrade ----

// Parses a response head keeping every header line: {status, headers:
// [[lowercased name, value]], get(name), all(name), rest}; null if incomplete.
export function parseResponseHead(buf) {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) (.*)$/.exec(lines[0]);
  if (!m) throw new Error(`bad status line ${JSON.stringify(lines[0])}`);
  const headers = lines.slice(1).map((l) => {
    const i = l.indexOf(':');
    return [l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim()];
  });
  const all = (n) => headers.filter(([k]) => k === n.toLowerCase()).map(([, v]) => v);
  return {
    status: Number(m[1]),
    reason: m[2],
    head: buf.subarray(0, end + 4).toString('latin1'),
    headers,
    all,
    get: (n) => all(n)[0],
    rest: buf.subarray(end + 4),
  };
}

export function upgradeRequest(path, { protocols = [], method = 'POST', extra = [] } = {}) {
  return [
    `${method} ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Connection: Upgrade',
    'Upgrade: SPDY/3.1',
    ...protocols.map((p) => `X-Stream-Protocol-Version: ${p}`),
    'Content-Length: 0',
    ...extra,
    '',
    '',
  ].join('\r\n');
}

const UPGRADE_TIMEOUT_MS = 10000;

// Sends an upgrade request to url (http://127.0.0.1:P/...). On 101 resolves
// {res, sock, rest}; otherwise reads to the close: {res, body}.
export function upgrade(url, opts = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(u.port), u.hostname);
    sock.setNoDelay(true);
    let buf = Buffer.alloc(0);
    let res = null;
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`upgrade: no answer in ${UPGRADE_TIMEOUT_MS} ms; got ${JSON.stringify(buf.toString('latin1'))}`));
    }, UPGRADE_TIMEOUT_MS);
    const onData = (d) => {
      buf = Buffer.concat([buf, d]);
      if (res) return;
      res = parseResponseHead(buf);
      if (res && res.status === 101) {
        clearTimeout(timer);
        sock.pause(); // the frame reader resumes it
        sock.off('data', onData);
        sock.off('close', onClose);
        resolve({ res, sock, rest: res.rest });
      }
    };
    const onClose = () => {
      clearTimeout(timer);
      if (!res) {
        reject(new Error(`upgrade: closed without an answer; got ${JSON.stringify(buf.toString('latin1'))}`));
        return;
      }
      resolve({ res, body: buf.subarray(buf.indexOf('\r\n\r\n') + 4).toString('latin1') });
    };
    sock.on('data', onData);
    sock.on('close', onClose);
    sock.on('error', () => {});
    sock.write(upgradeRequest(u.pathname + u.search, opts));
  });
}

// ---- a frame-level peer ----

const FRAME_TIMEOUT_MS = 5000;
const openPeers = new Set();

// Destroys every raw peer a failed test left open.
export function destroyAllPeers() {
  for (const p of openPeers) p.sock.destroy();
  openPeers.clear();
}

// Client side of an upgraded connection. Received frames are queued in
// order; header blocks of SYN_REPLY/SYN_STREAM/HEADERS are inflated through
// the session's server->client context into f.headers.
export class RawSpdy {
  constructor(sock, rest = Buffer.alloc(0)) {
    this.sock = sock;
    this.deflater = new Deflater();
    this.inflater = new Inflater();
    this.buf = Buffer.alloc(0);
    this.queue = [];
    this.waiter = null;
    this.isClosed = false;
    this.nextId = 1;
    this.decodeChain = Promise.resolve();
    openPeers.add(this);
    this.closed = new Promise((resolve) => {
      sock.on('close', () => {
        openPeers.delete(this);
        this.decodeChain.then(() => {
          this.isClosed = true;
          this.wake();
          this.deflater.close();
          this.inflater.close();
          resolve();
        });
      });
    });
    sock.on('error', () => {});
    sock.on('data', (d) => this.onData(d));
    if (rest.length) this.onData(rest);
    sock.resume();
  }

  // Upgrades url and wraps the connection; throws unless 101.
  static async connect(url, opts = {}) {
    const r = await upgrade(url, opts);
    if (!r.sock)
      throw new Error(`upgrade refused: ${r.res.status} ${r.res.head}${r.body}`);
    const p = new RawSpdy(r.sock, r.rest);
    p.response = r.res;
    return p;
  }

  onData(d) {
    this.buf = Buffer.concat([this.buf, d]);
    for (;;) {
      const f = parseFrame(this.buf);
      if (!f) break;
      this.buf = this.buf.subarray(f.raw.length);
      f.raw = Buffer.from(f.raw);
      f.payload = Buffer.from(f.payload);
      if (f.block) f.block = Buffer.from(f.block);
      this.decodeChain = this.decodeChain.then(() => this.decodeAndQueue(f));
    }
  }

  async decodeAndQueue(f) {
    if (f.control && f.block && f.version === 3) {
      try {
        f.headers = decodeNV(await this.inflater.inflate(f.block));
      } catch (e) {
        f.headerError = e.message;
      }
    }
    this.queue.push(f);
    this.wake();
  }

  wake() {
    const w = this.waiter;
    this.waiter = null;
    if (w) w();
  }

  send(buf) {
    this.sock.write(buf);
  }

  async compress(headers) {
    return this.deflater.compress(encodeNV(headers));
  }

  // Sends SYN_STREAM(id) with headers; id defaults to the next odd id.
  async synStream(headers, { id, flags = 0 } = {}) {
    const sid = id ?? this.nextId;
    if (sid % 2 === 1 && sid >= this.nextId) this.nextId = sid + 2;
    this.send(synStreamFrame(sid, await this.compress(headers), flags));
    return sid;
  }

  // Next frame, or {closed: true} once the server closed and nothing is
  // queued; throws after timeoutMs.
  async next(timeoutMs = FRAME_TIMEOUT_MS) {
    const deadline = Date.now() + timeoutMs;
    while (!this.queue.length && !this.isClosed) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no frame from the server in ${timeoutMs} ms`);
      await new Promise((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    return this.queue.length ? this.queue.shift() : { closed: true };
  }

  // The next frame must satisfy the expectation: {type, streamId, status,
  // flags, ...} compared field by field (type may be 'DATA').
  async expect(want, timeoutMs) {
    const f = await this.next(timeoutMs);
    const got = describeFrame(f);
    if (f.closed) assert.fail(`expected ${JSON.stringify(want)}, got ${got}`);
    const { type, ...fields } = want;
    if (type === 'DATA') assert.equal(f.control, false, `expected DATA, got ${got}`);
    else if (type !== undefined) assert.equal(f.type, type, `expected ${TYPE_NAME[type]}, got ${got}`);
    for (const [k, v] of Object.entries(fields))
      assert.deepEqual(f[k], v, `${k}: expected ${JSON.stringify(v)}, got ${got}`);
    return f;
  }

  // No frame may arrive for ms (and the connection stays open).
  async expectQuiet(ms) {
    await new Promise((r) => setTimeout(r, ms));
    await this.decodeChain;
    if (this.queue.length)
      assert.fail(`unexpected frames: ${this.queue.map(describeFrame).join('; ')}`);
    assert.equal(this.isClosed, false, 'the server closed the connection');
  }

  // PING(id) must come back as the very next frame, byte-identical.
  async pingRoundTrip(id, timeoutMs) {
    const frame = pingFrame(id);
    this.send(frame);
    const f = await this.expect({ type: TYPE.PING, pingId: id }, timeoutMs);
    assert.deepEqual(f.raw, frame);
  }

  // Per-stream state built by until(): {replied, headers, data (Buffer),
  // fin, rst}.
  stream(id) {
    this.streams ??= new Map();
    if (!this.streams.has(id))
      this.streams.set(id, { replied: false, headers: null, data: Buffer.alloc(0), fin: false, rst: null });
    return this.streams.get(id);
  }

  account(f) {
    (this.log ??= []).push(f);
    if (!f.control) {
      const s = this.stream(f.streamId);
      s.data = Buffer.concat([s.data, f.payload]);
      if (f.flags & FLAG_FIN) s.fin = true;
    } else if (f.type === TYPE.SYN_REPLY) {
      const s = this.stream(f.streamId);
      s.replied = true;
      s.headers = f.headers;
      if (f.flags & FLAG_FIN) s.fin = true;
    } else if (f.type === TYPE.RST_STREAM) {
      this.stream(f.streamId).rst = f.status;
    } else if (f.type === TYPE.GOAWAY) {
      this.goaway = f;
    }
  }

  // Consumes frames into the per-stream state until pred(this) holds.
  async until(pred, timeoutMs = FRAME_TIMEOUT_MS, what = 'the condition') {
    const deadline = Date.now() + timeoutMs;
    const seen = () => (this.log || []).map(describeFrame).join('; ');
    while (!pred(this)) {
      const left = deadline - Date.now();
      let f;
      try {
        if (left <= 0) throw new Error('timeout');
        f = await this.next(left);
      } catch {
        throw new Error(`${what}: not met in ${timeoutMs} ms; frames so far: ${seen()}`);
      }
      if (f.closed)
        throw new Error(`${what}: the server closed the connection first; frames: ${seen()}`);
      this.account(f);
    }
  }

  // Every frame until the server closes the connection.
  async drainToClose(timeoutMs = FRAME_TIMEOUT_MS) {
    const out = [];
    for (;;) {
      let f;
      try {
        f = await this.next(timeoutMs);
      } catch (e) {
        throw new Error(`${e.message}; the connection is still open after: ` +
          `${out.map(describeFrame).join('; ') || 'no frame'}`);
      }
      if (f.closed) return out;
      out.push(f);
    }
  }

  // destroyAllPeers() leaves this one alone (a background case).
  untrack() {
    openPeers.delete(this);
  }

  destroy() {
    this.sock.destroy();
  }
}
