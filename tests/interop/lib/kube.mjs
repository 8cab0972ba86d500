// @kubernetes/client-node's WebSocket Exec pointed at a sluice streaming
// URL. client-node dials ws://<server without scheme>/api/v1/namespaces/…,
// so a cluster server of "http://HOST:P/exec/TOKEN?x=" puts the whole kube
// path in the query string, which the streaming server ignores.
import { Writable } from 'node:stream';
import { Attach, Exec, KubeConfig } from '@kubernetes/client-node';
// Not re-exported by the package index; its constructor takes a socket
// factory "for test injection", which lets us see the close code even when
// the close comes before exec() resolves.
import { WebSocketHandler } from '@kubernetes/client-node/dist/web-socket-handler.js';
import WebSocket from 'ws';
import { trackSocket } from './session.mjs';

const KUBE_TIMEOUT_MS = 20000;

export function kubeConfigFor(wsUrl) {
  const server = wsUrl.replace(/^ws:/, 'http:') + '?x=';
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // client-node refuses plain http unless skipTLSVerify is set.
    clusters: [{ name: 'sluice', server, skipTLSVerify: true }],
    users: [{ name: 'nobody' }],
    contexts: [{ name: 'sluice', cluster: 'sluice', user: 'nobody' }],
    currentContext: 'sluice',
  });
  return kc;
}

// A Writable that keeps what it is given.
export class Collector extends Writable {
  constructor() {
    super();
    this.chunks = [];
  }

  _write(chunk, enc, cb) {
    this.chunks.push(Buffer.from(chunk));
    cb();
  }

  buffer() {
    return Buffer.concat(this.chunks);
  }

  text() {
    return this.buffer().toString('utf8');
  }
}

// Runs Exec.exec (or Attach.attach with attach: true) against the URL.
// Resolves once the socket has closed: {status (from statusCallback, or
// null), closeCode, ws}. `onOpen(ws)` runs right after the connection opens.
export async function kubeExec(wsUrl, { stdout = null, stderr = null, stdin = null, tty = false,
  command = ['ignored-by-sluice'], onOpen, attach = false } = {}) {
  const kc = kubeConfigFor(wsUrl);
  let sock = null;
  let dialed = null;
  let onClose;
  const closed = new Promise((resolve) => {
    onClose = resolve;
  });
  const factory = (uri, protocols, opts) => {
    dialed = { uri, protocols };
    sock = new WebSocket(uri, protocols, opts);
    sock.on('close', (code) => onClose(code));
    trackSocket(sock);
    return sock;
  };
  const handler = new WebSocketHandler(kc, factory);
  let status = null;
  const statuses = [];
  let ws;
  if (attach) {
    // Attach has no status callback: client-node drops the Status.
    ws = await new Attach(kc, handler).attach('default', 'pod', 'ctr', stdout, stderr, stdin, tty);
  } else {
    ws = await new Exec(kc, handler).exec('default', 'pod', 'ctr', command, stdout, stderr, stdin,
      tty, (s) => {
        statuses.push(s);
        status = s;
      });
  }
  if (ws !== sock) throw new Error('client-node did not use the injected socket');
  if (onOpen) await onOpen(ws);
  let timer;
  const closeCode = await Promise.race([
    closed,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`client-node exec: no close in ${KUBE_TIMEOUT_MS} ms`)),
        KUBE_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  return { status, statuses, closeCode, ws, protocol: ws.protocol, dialed };
}
