#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An HTTP/1.1 proxy that holds requests back: one client's slow path to a server (etcd's JSON
gateway here), to catch a writer mid-way or make one of its reads slow.

  http-delay-proxy.py LISTEN-HOST:PORT TARGET-HOST:PORT RULES-FILE

RULES-FILE (read again for every request; missing or empty: no delay) is a JSON list of
{"path": REGEX, "body"?: REGEX, "seconds": S}: a request whose path (and body, if given) matches
the first rule waits S seconds before it is forwarded; and {"path": REGEX, "hold": true}: the response to a matching request (a stream
already open too) is not relayed any further while that rule is in the file. Keep-alive connections are kept (one upstream connection per client connection);
responses are relayed as they arrive, chunk by chunk, so streams (etcd's /v3/watch) work.
Prints "ready" on stdout once listening.
"""
import json
import re
import socket
import socketserver
import sys
import time


def read_head(f):
    lines = []
    while True:
        line = f.readline(65536)
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            return lines
        lines.append(line)


def header(lines, name):
    for line in lines[1:]:
        k, _, v = line.decode("latin-1").partition(":")
        if k.strip().lower() == name:
            return v.strip()
    return None


def rules():
    try:
        with open(RULES) as f:
            return json.load(f) or []
    except (OSError, ValueError):
        return []


def delay_for(path, body):
    for r in rules():
        if not r.get("hold") and re.search(r.get("path", ""), path) and \
                re.search(r.get("body", ""), body.decode("latin-1")):
            return float(r.get("seconds", 0))
    return 0


def wait_unheld(path):
    while any(r.get("hold") and re.search(r.get("path", ""), path) for r in rules()):
        time.sleep(0.05)


def relay_body(src, dst, lines, is_response, path=None):
    """Copies one message body from src to dst, as framed by lines' headers (a response's pieces
    only while no hold rule matches path)."""
    te = (header(lines, "transfer-encoding") or "").lower()
    cl = header(lines, "content-length")
    if "chunked" in te:
        while True:
            size_line = src.readline(65536)
            if not size_line:
                return False
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            data = src.read(size + 2) if size else b""
            if path:
                wait_unheld(path)
            dst.write(size_line)
            if size == 0:
                # trailers until the empty line
                while True:
                    t = src.readline(65536)
                    dst.write(t)
                    if t in (b"\r\n", b"\n", b""):
                        break
                dst.flush()
                return True
            dst.write(data)
            dst.flush()
    if cl is not None:
        n = int(cl)
        while n > 0:
            data = src.read(min(n, 65536))
            if not data:
                return False
            dst.write(data)
            n -= len(data)
        dst.flush()
        return True
    if is_response:  # until the server closes
        while True:
            data = src.read1(65536)
            if not data:
                return False
            if path:
                wait_unheld(path)
            dst.write(data)
            dst.flush()
    return True


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        up = socket.create_connection(TARGET)
        upr, upw = up.makefile("rb"), up.makefile("wb")
        try:
            while True:
                lines = read_head(self.rfile)
                if not lines:
                    return
                path = lines[0].split(b" ")[1].decode("latin-1")
                if (header(lines, "expect") or "").lower() == "100-continue":
                    lines = [l for l in lines if not l.lower().startswith(b"expect:")]
                    self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                    self.wfile.flush()
                body = []

                class Buf:
                    def write(self, b):
                        body.append(b)

                    def flush(self):
                        pass
                if not relay_body(self.rfile, Buf(), lines, False):
                    return
                secs = delay_for(path, b"".join(body))
                if secs > 0:
                    time.sleep(secs)
                upw.write(b"".join(lines) + b"\r\n" + b"".join(body))
                upw.flush()
                while True:  # 1xx responses, then the real one
                    rlines = read_head(upr)
                    if not rlines:
                        return
                    wait_unheld(path)
                    self.wfile.write(b"".join(rlines) + b"\r\n")
                    self.wfile.flush()
                    if not rlines[0].split(b" ")[1].startswith(b"1"):
                        break
                if not relay_body(upr, self.wfile, rlines, True, path):
                    return
        except (OSError, ValueError):
            return
        finally:
            up.close()


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global TARGET, RULES
    lh, lp = sys.argv[1].rsplit(":", 1)
    th, tp = sys.argv[2].rsplit(":", 1)
    TARGET, RULES = (th, int(tp)), sys.argv[3]
    srv = Server((lh, int(lp)), Handler)
    print("ready", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
