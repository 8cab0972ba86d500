#!/usr/bin/python3
"""Debian's python3-kubernetes against sluice-kube: stream() exec and
portforward(), one case per run, the result as one JSON line on stdout.

Usage: kube_stream.py CASE URL TOKEN CA NAMESPACE POD [ARG]
  exec-streams   sh -c 'echo out; echo err >&2; exit 3': stdout, stderr, returncode
  exec-stdin     write a line to `head -n 1`, read it back
  portforward    ARG = port: GET /small through the forwarded socket; sha256 of the body
  exec-missing   exec into POD (which does not exist): the error
"""
import hashlib
import json
import sys

from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.stream import portforward, stream


def api(url, token, ca):
    c = client.Configuration()
    c.host = url
    if url.startswith("https:"):
        c.ssl_ca_cert = ca
    if token:
        c.api_key = {"authorization": "Bearer " + token}
    return client.CoreV1Api(client.ApiClient(c))


def exec_streams(v1, ns, pod):
    resp = stream(v1.connect_get_namespaced_pod_exec, pod, ns,
                  command=["sh", "-c", "echo out; echo err >&2; exit 3"],
                  stderr=True, stdin=False, stdout=True, tty=False, _preload_content=False)
    out, err = "", ""
    while resp.is_open():
        resp.update(timeout=5)
        out += resp.read_stdout() if resp.peek_stdout() else ""
        err += resp.read_stderr() if resp.peek_stderr() else ""
    return {"stdout": out, "stderr": err, "returncode": resp.returncode}


def exec_stdin(v1, ns, pod):
    resp = stream(v1.connect_get_namespaced_pod_exec, pod, ns, command=["head", "-n", "1"],
                  stderr=True, stdin=True, stdout=True, tty=False, _preload_content=False)
    resp.write_stdin("a line from python\n")
    out = ""
    while resp.is_open():
        resp.update(timeout=5)
        out += resp.read_stdout() if resp.peek_stdout() else ""
    return {"stdout": out, "returncode": resp.returncode}


def port_forward(v1, ns, pod, port):
    pf = portforward(v1.connect_get_namespaced_pod_portforward, pod, ns, ports=str(port))
    sock = pf.socket(port)
    sock.setblocking(True)
    sock.sendall(b"GET /small HTTP/1.0\r\nHost: x\r\n\r\n")
    # Read by Content-Length: sluiced's legacy WebSocket port-forward does
    # not close the WebSocket when the pod side ends (no EOF here).
    data = b""
    want = None
    while want is None or len(data) < want:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
        if want is None and b"\r\n\r\n" in data:
            head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    want = len(head) + 4 + int(value)
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return {"status": head.split(b"\r\n")[0].decode(), "length": len(body),
            "sha256": hashlib.sha256(body).hexdigest(), "error": pf.error(port)}


def exec_missing(v1, ns, pod):
    try:
        stream(v1.connect_get_namespaced_pod_exec, pod, ns, command=["true"],
               stderr=True, stdin=False, stdout=True, tty=False)
    except ApiException as e:
        return {"status": e.status, "reason": str(e.reason), "body": str(e.body)}
    except Exception as e:  # websocket handshake errors
        return {"error": type(e).__name__, "text": str(e)}
    return {"error": None}


def main():
    case, url, token, ca, ns, pod = sys.argv[1:7]
    v1 = api(url, token, ca)
    if case == "exec-streams":
        res = exec_streams(v1, ns, pod)
    elif case == "exec-stdin":
        res = exec_stdin(v1, ns, pod)
    elif case == "portforward":
        res = port_forward(v1, ns, pod, int(sys.argv[7]))
    elif case == "exec-missing":
        res = exec_missing(v1, ns, pod)
    else:
        sys.exit("unknown case " + case)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
