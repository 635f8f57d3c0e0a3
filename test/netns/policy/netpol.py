#!/usr/bin/env python3
"""The NetworkPolicy truth-table helper of policy-truth-table-lib.sh (test-policy-truth-table.sh,
test-policy-e2e.sh), written from the networking.k8s.io/v1 spec and independent of weft's compiler:

  netpol.py serve                      in a pod: TCP and UDP on 80 and 81 (UDP echoes)
  netpol.py probe TARGETS.json         as root, outside the pods: probes every ordered pair of
                                       targets ([name, ip, netns path]) on 80/81 TCP/UDP at once;
                                       prints {"SRC>DST port/proto": true|false}
  netpol.py model CLUSTER.json POLICIES.json
                                       the expected table for the same cells, from the model below
"""
import ctypes
import errno
import ipaddress
import json
import os
import select
import selectors
import socket
import sys
import time

PORTS = [80, 81]
PROTOS = ["TCP", "UDP"]
CLONE_NEWNET = 0x40000000
LIBC = ctypes.CDLL(None, use_errno=True)


def serve():
    socks = []
    for port in PORTS:
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t.bind(("0.0.0.0", port))
        t.listen(64)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("0.0.0.0", port))
        socks += [t, u]
    print("ready", flush=True)
    while True:
        r, _, _ = select.select(socks, [], [])
        for s in r:
            if s.type == socket.SOCK_STREAM:
                c, _ = s.accept()
                try:
                    c.sendall(b"ok")
                finally:
                    c.close()
            else:
                data, addr = s.recvfrom(64)
                s.sendto(data, addr)


def setns(fd):
    if LIBC.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def probe(targets_file, timeout=1.0):
    """Every ordered pair of distinct targets ([name, ip, netns path]), 80/81 TCP/UDP, at once from
    one process: each source's sockets are opened inside its pod's namespace (setns, then back),
    then one select loop waits for all of them. A cell is allowed when, within the timeout, TCP
    connects and reads the server's "ok", or UDP gets its echo (three datagrams over the timeout:
    a lost datagram is no verdict). A policy drops silently, so a denied cell costs the timeout."""
    targets = json.load(open(targets_file))
    out = {}
    sel = selectors.DefaultSelector()
    udp = []
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        for src, _, path in targets:
            fd = os.open(path, os.O_RDONLY)
            try:
                setns(fd)
            finally:
                os.close(fd)
            for dst, ip, _ in targets:
                if dst == src:
                    continue
                for port in PORTS:
                    for proto in PROTOS:
                        key = "%s>%s %d/%s" % (src, dst, port, proto)
                        out[key] = False
                        if proto == "TCP":
                            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                            s.setblocking(False)
                            if s.connect_ex((ip, port)) not in (0, errno.EINPROGRESS):
                                s.close()
                                continue
                            sel.register(s, selectors.EVENT_WRITE, [key, "connect", b""])
                        else:
                            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                            s.setblocking(False)
                            s.connect((ip, port))
                            sel.register(s, selectors.EVENT_READ, [key, "udp", b""])
                            udp.append(s)
    finally:
        setns(home)
        os.close(home)

    def done(s):
        sel.unregister(s)
        s.close()

    start = time.monotonic()
    sends = 0
    while sel.get_map():
        elapsed = time.monotonic() - start
        if elapsed >= timeout:
            break
        if sends < 3 and elapsed >= sends * timeout / 3:
            sends += 1
            for s in udp:
                if s.fileno() >= 0:
                    try:
                        s.send(b"x")
                    except OSError:
                        pass
        wait = min(timeout, sends * timeout / 3 if sends < 3 else timeout) - elapsed
        for k, _ in sel.select(max(wait, 0.001)):
            s, st = k.fileobj, k.data
            if st[1] == "connect":
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    done(s)
                else:
                    st[1] = "tcp"
                    sel.modify(s, selectors.EVENT_READ, st)
                continue
            try:
                data = s.recv(8)
            except BlockingIOError:
                continue
            except OSError:
                data = b""  # refused: nothing listens, which here is never a policy verdict
            if st[1] == "udp":
                out[st[0]] = data == b"x"
                done(s)
                continue
            st[2] += data
            if st[2] == b"ok" or not data or len(st[2]) >= 2:
                out[st[0]] = st[2] == b"ok"
                done(s)
    for k in list(sel.get_map().values()):
        k.fileobj.close()
    print(json.dumps(out, sort_keys=True, separators=(",", ":")))


# ---- the model ----

def selector_matches(sel, labels):
    """metav1.LabelSelector; None selects nothing, {} everything."""
    if sel is None:
        return False
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def policy_types(spec):
    if spec.get("policyTypes"):
        return spec["policyTypes"]
    return ["Ingress"] + (["Egress"] if "egress" in spec else [])


def peer_matches(pol_ns, peer, other, namespaces):
    if "ipBlock" in peer:
        ip = ipaddress.ip_address(other["ip"])
        b = peer["ipBlock"]
        return ip in ipaddress.ip_network(b["cidr"]) and not any(
            ip in ipaddress.ip_network(e) for e in b.get("except") or [])
    if "namespaceSelector" in peer:
        if not selector_matches(peer["namespaceSelector"], namespaces.get(other["ns"], {})):
            return False
    elif other["ns"] != pol_ns:
        return False
    if "podSelector" in peer:
        return selector_matches(peer["podSelector"], other["labels"])
    return True


def port_matches(ports, dst, port, proto):
    if not ports:
        return True
    for p in ports:
        if p.get("protocol", "TCP") != proto:
            continue
        want = p.get("port")
        if want is None:
            return True
        if isinstance(want, str):
            if any(c["name"] == want and c["port"] == port and c.get("protocol", "TCP") == proto
                   for c in dst["ports"]):
                return True
            continue
        if want <= port <= p.get("endPort", want):
            return True
    return False


def direction_allows(pods_pols, me, other, dst, port, proto, namespaces, kind):
    key, peers_key = ("ingress", "from") if kind == "Ingress" else ("egress", "to")
    selecting = [p for p in pods_pols if p["ns"] == me["ns"] and kind in policy_types(p["spec"])
                 and selector_matches(p["spec"].get("podSelector", {}), me["labels"])]
    if not selecting:
        return True
    for p in selecting:
        for rule in p["spec"].get(key) or []:
            peers = rule.get(peers_key)
            if peers and not any(peer_matches(p["ns"], peer, other, namespaces) for peer in peers):
                continue
            if port_matches(rule.get("ports"), dst, port, proto):
                return True
    return False


def model(cluster_file, policies_file):
    cluster = json.load(open(cluster_file))
    pols = json.load(open(policies_file))
    namespaces = cluster["namespaces"]
    pods = cluster["pods"]
    out = {}
    for s in pods:
        for d in pods:
            if s is d:
                continue
            for port in PORTS:
                for proto in PROTOS:
                    ok = direction_allows(pols, s, d, d, port, proto, namespaces, "Egress") and \
                        direction_allows(pols, d, s, d, port, proto, namespaces, "Ingress")
                    out["%s>%s %d/%s" % (s["name"], d["name"], port, proto)] = ok
    print(json.dumps(out, sort_keys=True, separators=(",", ":")))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve()
    elif sys.argv[1] == "probe":
        probe(sys.argv[2])
    elif sys.argv[1] == "model":
        model(sys.argv[2], sys.argv[3])
