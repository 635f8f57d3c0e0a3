#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A fake kube-apiserver for weft's tests: just enough of the core/v1 Node API, on the real wire
format, to test a list/watch client. Python 3 stdlib only.

  fake-apiserver.py [--bind 127.0.0.1] [--port 0] [--port-file F] [--token T]
                    [--cert crt.pem --key key.pem] [--node NAME=CIDR[,CIDR6]]...

API (bearer token required when --token is given: 401 + Status otherwise):
  GET    /version
  GET    /api/v1/nodes                          NodeList {kind, apiVersion, metadata.resourceVersion, items}
  GET    /api/v1/nodes?watch=1&resourceVersion=N[&allowWatchBookmarks=true][&timeoutSeconds=S]
         chunked stream of {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": ...} lines;
         resourceVersion "" or "0" starts with a synthetic ADDED per node; a resourceVersion older
         than the last compaction gets ERROR with a Status code 410 (Gone), then the stream ends.
  GET    /api/v1/nodes/NAME
  PATCH  /api/v1/nodes/NAME[/status]           application/merge-patch+json (RFC 7386), or
         application/strategic-merge-patch+json (merge; status.conditions merged by type)
  DELETE /api/v1/nodes/NAME
Test control (no auth):
  POST   /fixture/nodes          body: a Node (or {"name", "podCIDRs", "annotations", "labels"});
                                 created (ADDED) or merged into the existing one (MODIFIED)
  POST   /fixture/advance        the resourceVersion moves on with no Node event (as writes to other
                                 resources move etcd's global revision)
  POST   /fixture/compact        advance (unless body {"advance": false}), then every resourceVersion
                                 up to now is gone: watches from an older one get 410
  POST   /fixture/end-watches    every open watch ends normally (final chunk), as at timeoutSeconds
  POST   /fixture/drop-watches   every open watch connection is cut without the final chunk
  POST   /fixture/bookmark       every watch with allowWatchBookmarks gets a BOOKMARK now
  POST   /fixture/token          body {"token": "..."}: the accepted token from now on
  GET    /fixture/stats          {"watches": open watches, "lists", "watches_started", "patches"}

Changes that leave an object as it was do not bump its resourceVersion and send no event (as the
real server does). Real NodeList items carry no kind/apiVersion; watch objects do.
"""
import argparse
import copy
import datetime
import http.server
import json
import os
import select
import socket
import socketserver
import ssl
import sys
import threading
import urllib.parse
import uuid

STATE = threading.Condition()
NODES = {}          # name -> Node (without kind/apiVersion)
EVENTS = []         # (rv, type, object with kind/apiVersion) after the last compaction
RV = [100]          # the store's resourceVersion counter
COMPACTED = [0]     # watches from a resourceVersion below this get 410
DROP_GEN = [0]      # bumped by /fixture/drop-watches
END_GEN = [0]       # bumped by /fixture/end-watches
BOOKMARK_GEN = [0]
TOKEN = [None]
STATS = {"watches": 0, "lists": 0, "watches_started": 0, "patches": 0}


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code, reason, message, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details:
        s["details"] = details
    return s


def with_kind(node):
    o = {"kind": "Node", "apiVersion": "v1"}
    o.update(copy.deepcopy(node))
    return o


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = copy.deepcopy(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge(target, patch):
    """Merge patch, except that lists of conditions merge by their "type" key (patchMergeKey)."""
    if not isinstance(patch, dict) or not isinstance(target, dict):
        return merge_patch(target, patch)
    out = copy.deepcopy(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif k == "conditions" and isinstance(v, list) and isinstance(out.get(k), list):
            conds = {c.get("type"): c for c in out[k]}
            order = [c.get("type") for c in out[k]]
            for c in v:
                if c.get("type") not in conds:
                    order.append(c.get("type"))
                conds[c.get("type")] = merge_patch(conds.get(c.get("type"), {}), c)
            out[k] = [conds[t] for t in order]
        else:
            out[k] = strategic_merge(out.get(k), v)
    return out


def record(typ, node):
    """Caller holds STATE. Bumps the resourceVersion, stores it in node, logs the event."""
    RV[0] += 1
    node["metadata"]["resourceVersion"] = str(RV[0])
    EVENTS.append((RV[0], typ, with_kind(node)))
    STATE.notify_all()


def normalize_node(body):
    """A Node from /fixture/nodes' body: a Node object or the short form."""
    if "metadata" in body or "spec" in body:
        return copy.deepcopy(body)
    node = {"metadata": {"name": body["name"]}, "spec": {}}
    if body.get("podCIDRs"):
        # podCIDR is the first of podCIDRs (the API server keeps them in step); empty = omitted.
        node["spec"]["podCIDRs"] = body["podCIDRs"]
        node["spec"]["podCIDR"] = body["podCIDRs"][0]
    for k in ("annotations", "labels"):
        if k in body:
            node["metadata"][k] = body[k]
    return node


def upsert_node(body):
    """Caller holds STATE. Returns (status, node)."""
    node = normalize_node(body)
    name = node.get("metadata", {}).get("name")
    if not name:
        return 422, status(422, "Invalid", "metadata.name: Required value")
    for k in ("kind", "apiVersion"):
        node.pop(k, None)
    old = NODES.get(name)
    if old is None:
        meta = node.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now())
        meta.setdefault("labels", {"kubernetes.io/hostname": name})
        meta.pop("resourceVersion", None)
        node.setdefault("spec", {})
        node.setdefault("status", {"conditions": [], "addresses": []})
        NODES[name] = node
        record("ADDED", node)
        return 201, node
    meta = node.get("metadata", {})
    meta.pop("resourceVersion", None)
    new = merge_patch(old, node)
    if new != old:
        NODES[name] = new
        record("MODIFIED", new)
    return 200, NODES[name]


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    ssl_ctx = None

    def get_request(self):
        sock, addr = self.socket.accept()
        if self.ssl_ctx:
            # Handshake in the handler's thread (first read), not in the accept loop.
            sock = self.ssl_ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver/1"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake-apiserver: " + (fmt % args) + "\n")

    # ---- plumbing ----

    def send_json(self, code, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        return json.loads(raw) if raw.strip() else {}

    def authorized(self):
        if TOKEN[0] is None:
            return True
        if self.headers.get("Authorization") == "Bearer " + TOKEN[0]:
            return True
        self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        return False

    def route(self):
        u = urllib.parse.urlsplit(self.path)
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        parts = [urllib.parse.unquote(p) for p in u.path.strip("/").split("/") if p]
        return parts, q

    def not_found(self, name=None):
        if name:
            self.send_json(404, status(404, "NotFound", 'nodes "%s" not found' % name,
                                       {"name": name, "kind": "nodes"}))
        else:
            self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))

    # ---- verbs ----

    def do_GET(self):
        parts, q = self.route()
        if parts == ["fixture", "stats"]:
            with STATE:
                return self.send_json(200, dict(STATS, resourceVersion=str(RV[0])))
        if parts == ["version"]:
            return self.send_json(200, {"major": "1", "minor": "29", "gitVersion": "v1.29.0-fake"})
        if not self.authorized():
            return
        if parts == ["api", "v1", "nodes"]:
            if q.get("watch") in ("1", "true"):
                return self.watch(q)
            with STATE:
                STATS["lists"] += 1
                items = [copy.deepcopy(NODES[n]) for n in sorted(NODES)]
                rv = str(RV[0])
            return self.send_json(200, {"kind": "NodeList", "apiVersion": "v1",
                                        "metadata": {"resourceVersion": rv}, "items": items})
        if len(parts) in (4, 5) and parts[:3] == ["api", "v1", "nodes"] and parts[4:] in ([], ["status"]):
            with STATE:
                node = NODES.get(parts[3])
                node = with_kind(node) if node else None
            return self.send_json(200, node) if node else self.not_found(parts[3])
        self.not_found()

    def do_PATCH(self):
        parts, _ = self.route()
        if not self.authorized():
            return
        if not (len(parts) in (4, 5) and parts[:3] == ["api", "v1", "nodes"] and parts[4:] in ([], ["status"])):
            return self.not_found()
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            return self.send_json(415, status(415, "UnsupportedMediaType",
                                              "the body of the request was in an unknown format - accepted "
                                              "media types include: application/merge-patch+json, "
                                              "application/strategic-merge-patch+json"))
        try:
            patch = self.body()
        except ValueError as e:
            return self.send_json(400, status(400, "BadRequest", "invalid JSON: %s" % e))
        name = parts[3]
        with STATE:
            old = NODES.get(name)
            if old is None:
                return self.not_found(name)
            STATS["patches"] += 1
            merge = strategic_merge if ctype == "application/strategic-merge-patch+json" else merge_patch
            if parts[4:] == ["status"]:
                new = copy.deepcopy(old)
                new["status"] = merge(old.get("status", {}), patch.get("status", {}))
            else:
                patch = {k: v for k, v in patch.items() if k != "status"}
                patch.get("metadata", {}).pop("resourceVersion", None)
                new = merge(old, patch)
                new["metadata"]["name"] = name
            if new != old:
                NODES[name] = new
                record("MODIFIED", new)
            out = with_kind(NODES[name])
        self.send_json(200, out)

    def do_DELETE(self):
        parts, _ = self.route()
        if not self.authorized():
            return
        if len(parts) != 4 or parts[:3] != ["api", "v1", "nodes"]:
            return self.not_found()
        with STATE:
            node = NODES.pop(parts[3], None)
            if node is None:
                return self.not_found(parts[3])
            record("DELETED", node)
            out = with_kind(node)
        self.send_json(200, out)

    def do_POST(self):
        parts, _ = self.route()
        try:
            body = self.body()
        except ValueError as e:
            return self.send_json(400, status(400, "BadRequest", "invalid JSON: %s" % e))
        with STATE:
            if parts == ["fixture", "nodes"]:
                code, obj = upsert_node(body)
                return self.send_json(code, with_kind(obj) if code < 300 else obj)
            if parts == ["fixture", "advance"]:
                RV[0] += 1
                return self.send_json(200, {"resourceVersion": str(RV[0])})
            if parts == ["fixture", "compact"]:
                if body.get("advance", True):
                    RV[0] += 1
                COMPACTED[0] = RV[0]
                del EVENTS[:]
                return self.send_json(200, {"compacted": str(RV[0])})
            if parts == ["fixture", "end-watches"]:
                END_GEN[0] += 1
                STATE.notify_all()
                return self.send_json(200, {"ended": STATS["watches"]})
            if parts == ["fixture", "drop-watches"]:
                DROP_GEN[0] += 1
                STATE.notify_all()
                return self.send_json(200, {"dropped": STATS["watches"]})
            if parts == ["fixture", "bookmark"]:
                BOOKMARK_GEN[0] += 1
                STATE.notify_all()
                return self.send_json(200, {})
            if parts == ["fixture", "token"]:
                TOKEN[0] = body.get("token")
                return self.send_json(200, {})
        self.not_found()

    # ---- watch ----

    def chunk(self, obj):
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def client_gone(self):
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
            return bool(r) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def watch(self, q):
        rv_s = q.get("resourceVersion", "")
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
        try:
            rv = int(rv_s) if rv_s else 0
        except ValueError:
            return self.send_json(400, status(400, "BadRequest", 'invalid resourceVersion "%s"' % rv_s))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        with STATE:
            STATS["watches"] += 1
            STATS["watches_started"] += 1
            drop_gen, bm_gen, end_gen = DROP_GEN[0], BOOKMARK_GEN[0], END_GEN[0]
            pending = []
            if rv == 0:
                # "Any" resourceVersion: the current state as ADDED events, then changes.
                pending = [{"type": "ADDED", "object": with_kind(NODES[n])} for n in sorted(NODES)]
                sent = RV[0]
            elif rv < COMPACTED[0]:
                pending = [{"type": "ERROR", "object": status(
                    410, "Expired", "too old resource version: %d (%d)" % (rv, COMPACTED[0]))}]
                sent = None
            else:
                sent = rv
        deadline = None if timeout is None else datetime.datetime.now().timestamp() + timeout
        dropped = False
        try:
            for ev in pending:
                self.chunk(ev)
            while sent is not None:
                with STATE:
                    STATE.wait(0.2)
                    if DROP_GEN[0] != drop_gen:
                        dropped = True
                        break
                    ended = END_GEN[0] != end_gen
                    out = [{"type": t, "object": o} for (r, t, o) in EVENTS if r > sent]
                    sent = max([sent] + [r for (r, _, _) in EVENTS])
                    if bookmarks and BOOKMARK_GEN[0] != bm_gen:
                        bm_gen = BOOKMARK_GEN[0]
                        out.append({"type": "BOOKMARK", "object": {
                            "kind": "Node", "apiVersion": "v1",
                            "metadata": {"resourceVersion": str(RV[0])}}})
                        sent = max(sent, RV[0])
                for ev in out:
                    self.chunk(ev)
                if ended:
                    break
                if deadline is not None and datetime.datetime.now().timestamp() >= deadline:
                    break
                if self.client_gone():
                    return
            if dropped:
                # Like a crashed apiserver or a broken connection: no terminating chunk.
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (OSError, ValueError):
            return
        finally:
            with STATE:
                STATS["watches"] -= 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--token")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--node", action="append", default=[], help="NAME=CIDR[,CIDR6]")
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args()

    TOKEN[0] = a.token
    with STATE:
        for spec in a.node:
            name, _, cidrs = spec.partition("=")
            upsert_node({"name": name, "podCIDRs": [c for c in cidrs.split(",") if c]})

    family = socket.AF_INET6 if ":" in a.bind else socket.AF_INET
    Server.address_family = family
    srv = Server((a.bind, a.port), Handler)
    srv.verbose = a.verbose
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        srv.ssl_ctx = ctx
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.rename(a.port_file + ".tmp", a.port_file)
    print("fake-apiserver listening on %s:%d (%s)" % (a.bind, port, "https" if a.cert else "http"), flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
