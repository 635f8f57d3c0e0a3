#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cluster objects for bench/policy.sh, written straight into etcd under weftd's object key schema
(/work/notes/objects-in-etcd.md: PREFIX/objects/RESOURCE/NS/NAME, compact Kubernetes JSON, txn batches),
and the same policies rendered the way iptables-based plugins do, for iptables-restore.

  policy-feed.py URL PREFIX CMD ...
    namespaces                          ns0..ns9 (label name=nsK)
    pods FROM TO NODE NET BASE          pod p<i> in ns<i % 10>, labels app=a<i % 7>, on NODE,
                                        IP = NET's address + BASE + i
    pods-del FROM TO
    pod NS NAME NODE IP K=V[,K=V...]    one pod (a real one: the probes' pods)
    policies FROM TO                    np<i> in ns<i % 10>: selects app=a<i % 7>, ingress from
                                        app=a<(i + 1) % 7> of its namespace on TCP 80 and 1000 + i % 100
    policies-del FROM TO
    allow                               ns0/allow-client: pods role=server admit pods role=client (all ports)
    allow-del
    render-iptables NODE                iptables-restore input for NODE's pods (stdout), sizes (stderr)
Every write prints the CLOCK_REALTIME seconds just before its last request went out.

The iptables rendering is what kube-router-style plugins load: FORWARD jumps per isolated pod
(-d IP), a chain per pod (conntrack established accept, a jump per selecting policy, drop) and a chain
per policy with one rule per (peer, port). Only what the synthetic policies use is rendered (ingress,
pod/namespace selectors with matchLabels, numbered ports); anything else is refused.
"""
import base64, hashlib, http.client, ipaddress, json, sys, time, urllib.parse

NS = 10
b64 = lambda s: base64.b64encode(s.encode()).decode()


class Etcd:
    def __init__(self, url, prefix):
        u = urllib.parse.urlparse(url)
        self.c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        self.c.connect()
        self.prefix = prefix.rstrip("/")
        self.t = None

    def call(self, path, body):
        self.t = time.time()
        self.c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = self.c.getresponse()
        data = r.read()
        if r.status != 200:
            sys.exit("%s: %d %s" % (path, r.status, data[:300]))
        return json.loads(data)

    def key(self, res, ns, name):
        return "%s/objects/%s/%s%s" % (self.prefix, res, ns + "/" if ns else "", name)

    def put(self, items):  # items: [(key, obj)]
        for k in range(0, len(items), 500):
            ops = [{"request_put": {"key": b64(key), "value": b64(json.dumps(o, separators=(",", ":")))}}
                   for key, o in items[k:k + 500]]
            self.call("/v3/kv/txn", {"success": ops})

    def delete(self, keys):
        for k in range(0, len(keys), 500):
            self.call("/v3/kv/txn", {"success": [{"request_delete_range": {"key": b64(key)}} for key in keys[k:k + 500]]})

    def list(self, res):
        start = "%s/objects/%s/" % (self.prefix, res)
        end = start[:-1] + chr(ord("/") + 1)
        r = self.call("/v3/kv/range", {"key": b64(start), "range_end": b64(end)})
        return [json.loads(base64.b64decode(kv["value"])) for kv in r.get("kvs", [])]


def pod(ns, name, node, ip, labels):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}}


def policy(i):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "np%d" % i, "namespace": "ns%d" % (i % NS)},
            "spec": {"podSelector": {"matchLabels": {"app": "a%d" % (i % 7)}}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a%d" % ((i + 1) % 7)}}}],
                                  "ports": [{"protocol": "TCP", "port": 80}, {"protocol": "TCP", "port": 1000 + i % 100}]}]}}


ALLOW = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": "allow-client", "namespace": "ns0"},
         "spec": {"podSelector": {"matchLabels": {"role": "server"}}, "policyTypes": ["Ingress"],
                  "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "client"}}}]}]}}


def matches(sel, labels):
    if set(sel) - {"matchLabels"}:
        sys.exit("render-iptables: only matchLabels selectors are rendered")
    return all(labels.get(k) == v for k, v in (sel.get("matchLabels") or {}).items())


def render(db, node):
    pods = [p for p in db.list("pods") if p.get("status", {}).get("podIP") and
            p["status"].get("phase") not in ("Succeeded", "Failed") and not p["spec"].get("hostNetwork")]
    nslabels = {n["metadata"]["name"]: n["metadata"].get("labels", {}) for n in db.list("namespaces")}
    pols = sorted(db.list("networkpolicies"), key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    lab = lambda p: p["metadata"].get("labels", {})
    out = ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]", ":OUTPUT ACCEPT [0:0]"]
    rules, chains, peers_sum = [], [], 0
    selected = {}  # pod key -> [policy chain]
    for k, pol in enumerate(pols):
        ns, spec = pol["metadata"]["namespace"], pol["spec"]
        if "Egress" in spec.get("policyTypes", []) or spec.get("egress"):
            sys.exit("render-iptables: egress is not rendered")
        chain = "WPOL-%d" % k
        chains.append(chain)
        for p in pods:
            if p["spec"].get("nodeName") == node and p["metadata"]["namespace"] == ns and matches(spec["podSelector"], lab(p)):
                selected.setdefault((p["metadata"]["namespace"], p["metadata"]["name"]), []).append(chain)
        for rule in spec.get("ingress", []):
            srcs = []
            if not rule.get("from"):
                srcs = [None]
            for peer in rule.get("from", []):
                if "ipBlock" in peer:
                    sys.exit("render-iptables: ipBlock is not rendered")
                for p in pods:
                    pns = p["metadata"]["namespace"]
                    if "namespaceSelector" in peer:
                        if not matches(peer["namespaceSelector"], nslabels.get(pns, {})):
                            continue
                    elif pns != ns:
                        continue
                    if matches(peer.get("podSelector", {}), lab(p)):
                        srcs.append(p["status"]["podIP"])
            peers_sum += len([s for s in srcs if s])
            ports = rule.get("ports") or [None]
            for s in sorted(set(srcs), key=lambda x: (x is not None, x or "")):
                for port in ports:
                    r = "-A %s" % chain
                    if s:
                        r += " -s %s/32" % s
                    if port:
                        if not isinstance(port.get("port"), int) or port.get("endPort"):
                            sys.exit("render-iptables: only numbered ports are rendered")
                        proto = port.get("protocol", "TCP").lower()
                        r += " -p %s -m %s --dport %d" % (proto, proto, port["port"])
                    rules.append(r + " -j ACCEPT")
    local = [p for p in pods if p["spec"].get("nodeName") == node]
    n = 0
    # the order a Go map would list them in: arbitrary, stable here (a hash of the name)
    for p in sorted(local, key=lambda p: hashlib.sha1(("%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])).encode()).digest()):
        sel = selected.get((p["metadata"]["namespace"], p["metadata"]["name"]))
        if not sel:
            continue
        chain = "WPOD-%d" % n
        n += 1
        chains.append(chain)
        rules.append("-A FORWARD -d %s/32 -j %s" % (p["status"]["podIP"], chain))
        rules.append("-A %s -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT" % chain)
        rules += ["-A %s -j %s" % (chain, c) for c in sel]
        rules.append("-A %s -j DROP" % chain)
    out += [":%s - [0:0]" % c for c in chains] + rules + ["COMMIT"]
    print("\n".join(out))
    print("isolated_pods=%d chains=%d rules=%d peers_sum=%d local_pods=%d pods=%d policies=%d" %
          (n, len(chains), len(rules), peers_sum, len(local), len(pods), len(pols)), file=sys.stderr)


def main():
    url, prefix, cmd, a = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    db = Etcd(url, prefix)
    if cmd == "namespaces":
        db.put([(db.key("namespaces", None, "ns%d" % i),
                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns%d" % i, "labels": {"name": "ns%d" % i}}})
                for i in range(NS)])
    elif cmd == "pods":
        lo, hi, node, net, base = int(a[0]), int(a[1]), a[2], ipaddress.ip_network(a[3]), int(a[4])
        items = []
        for i in range(lo, hi + 1):
            ip = net.network_address + base + i
            if ip not in net:
                sys.exit("pod p%d: %s is outside %s" % (i, ip, net))
            items.append((db.key("pods", "ns%d" % (i % NS), "p%d" % i),
                          pod("ns%d" % (i % NS), "p%d" % i, node, str(ip), {"app": "a%d" % (i % 7)})))
        db.put(items)
    elif cmd == "pods-del":
        db.delete([db.key("pods", "ns%d" % (i % NS), "p%d" % i) for i in range(int(a[0]), int(a[1]) + 1)])
    elif cmd == "pod":
        labels = dict(kv.split("=", 1) for kv in a[4].split(",") if kv)
        db.put([(db.key("pods", a[0], a[1]), pod(a[0], a[1], a[2], a[3], labels))])
    elif cmd == "pod-del":
        db.delete([db.key("pods", a[0], a[1])])
    elif cmd == "policies":
        db.put([(db.key("networkpolicies", "ns%d" % (i % NS), "np%d" % i), policy(i)) for i in range(int(a[0]), int(a[1]) + 1)])
    elif cmd == "policies-del":
        db.delete([db.key("networkpolicies", "ns%d" % (i % NS), "np%d" % i) for i in range(int(a[0]), int(a[1]) + 1)])
    elif cmd == "allow":
        db.put([(db.key("networkpolicies", "ns0", "allow-client"), ALLOW)])
    elif cmd == "allow-del":
        db.delete([db.key("networkpolicies", "ns0", "allow-client")])
    elif cmd == "render-iptables":
        render(db, a[0])
        return
    else:
        sys.exit("policy-feed.py: unknown command " + cmd)
    print("%.6f" % db.t)


if __name__ == "__main__":
    main()
