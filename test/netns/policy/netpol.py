#!/usr/bin/env python3
"""The NetworkPolicy truth-table helper for test-policy-truth-table.sh, written from the
networking.k8s.io/v1 spec and independent of weft's compiler:

  netpol.py serve                      in a pod: TCP and UDP on 80 and 81 (UDP echoes)
  netpol.py probe SRC TARGETS.json     in a pod: probes every target (name ip) on 80/81 TCP/UDP in
                                       parallel; prints {"SRC>DST port/proto": true|false}
  netpol.py model CLUSTER.json POLICIES.json
                                       the expected table for the same cells, from the model below
"""
import ipaddress
import json
import select
import socket
import sys
import threading

PORTS = [80, 81]
PROTOS = ["TCP", "UDP"]


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


def probe_one(ip, port, proto, timeout):
    try:
        if proto == "TCP":
            s = socket.create_connection((ip, port), timeout=timeout)
            s.settimeout(timeout)
            ok = s.recv(2) == b"ok"
            s.close()
            return ok
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(timeout)
        s.sendto(b"x", (ip, port))
        ok = s.recvfrom(8)[0] == b"x"
        s.close()
        return ok
    except OSError:
        return False


def probe(src, targets_file, timeout=1.0):
    targets = json.load(open(targets_file))
    out = {}
    threads = []

    def run(key, ip, port, proto):
        # UDP: one retry (a lost datagram is not a verdict)
        out[key] = probe_one(ip, port, proto, timeout) or (proto == "UDP" and probe_one(ip, port, proto, timeout))

    for name, ip in targets:
        if name == src:
            continue
        for port in PORTS:
            for proto in PROTOS:
                key = "%s>%s %d/%s" % (src, name, port, proto)
                th = threading.Thread(target=run, args=(key, ip, port, proto))
                th.start()
                threads.append(th)
    for th in threads:
        th.join()
    print(json.dumps(out))


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
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve()
    elif sys.argv[1] == "probe":
        probe(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "model":
        model(sys.argv[2], sys.argv[3])
