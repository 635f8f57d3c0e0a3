#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes cluster objects in bulk, into etcd (per /work/notes/objects-in-etcd.md: the Kubernetes JSON
under PREFIX/objects/RESOURCE/NS/NAME, txn batches) or into the fake API server (fake-apiserver.py:
/fixture/apply Lists, status included, and DELETEs), for weftd's object-cache tests and bench/objects.sh.

  objects-feed.py (--etcd URL --prefix P | --api URL [--token T]) [--batch N] [--pause S] [--retry] CMD ...
    pods create FROM TO [LABEL=VALUE]   pod p<i> in namespace ns<i % 10>, IP 10.(200 + i/65536).x.y,
                                        labels app=a<i % 7>, batch=<i / N> and LABEL=VALUE
    pods delete FROM TO
    namespaces create FROM TO           ns<i> (ns0..ns9 are the pods' namespaces)
    policies create FROM TO             NetworkPolicy np<i> in ns<i % 10>
    services create FROM TO             Service s<i> in ns<i % 10> (and an EndpointSlice s<i>-x)
    raw-etcd KEY VALUE                  one put as is (for malformed values)
    rv advance-to N                     (fake API server) its resourceVersion moves on to at least N
--retry: a failed batch is retried until it goes through (for writes while the store restarts).
Prints the CLOCK_REALTIME seconds just before the last batch was sent (for latency measurement).
"""
import argparse, base64, http.client, json, sys, time, urllib.parse

NS = 10


def pod(i, extra):
    ip = "10.%d.%d.%d" % (200 + i // 65536, (i // 256) % 256, i % 256)
    labels = {"app": "a%d" % (i % 7), "batch": "b%d" % (i // 100)}
    if extra:
        k, v = extra.split("=", 1)
        labels[k] = v
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p%d" % i, "namespace": "ns%d" % (i % NS), "labels": labels,
                         "uid": "00000000-0000-4000-8000-%012d" % i},
            "spec": {"nodeName": "node%d" % (i % 3 + 1), "containers": [{"name": "c", "image": "x"}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}}


def namespace(i, extra):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns%d" % i, "labels": {"team": "t%d" % (i % 5)}}}


def policy(i, extra):
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "np%d" % i, "namespace": "ns%d" % (i % NS)},
            "spec": {"podSelector": {"matchLabels": {"app": "a%d" % (i % 7)}}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "a%d" % ((i + 1) % 7)}}}],
                                  "ports": [{"protocol": "TCP", "port": 80}]}]}}


def service(i, extra):
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s%d" % i, "namespace": "ns%d" % (i % NS)},
            "spec": {"selector": {"app": "a%d" % (i % 7)}, "clusterIP": "10.96.%d.%d" % (i // 250, i % 250 + 1),
                     "ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}]}}


def slice_(i, extra):
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "s%d-x" % i, "namespace": "ns%d" % (i % NS),
                         "labels": {"kubernetes.io/service-name": "s%d" % i}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.200.%d.%d" % (i // 250, i % 250 + 1)], "conditions": {"ready": True}}],
            "ports": [{"name": "http", "protocol": "TCP", "port": 8080}]}


RESOURCE = {"Pod": "pods", "Namespace": "namespaces", "NetworkPolicy": "networkpolicies", "Service": "services",
            "EndpointSlice": "endpointslices"}
API_PATH = {"pods": "/api/v1", "namespaces": "/api/v1", "services": "/api/v1",
            "networkpolicies": "/apis/networking.k8s.io/v1", "endpointslices": "/apis/discovery.k8s.io/v1"}


class Store:
    def __init__(self, a):
        self.a = a
        u = urllib.parse.urlparse(a.etcd or a.api)
        self.https = u.scheme == "https"
        self.host, self.port = u.hostname, u.port
        self.c = None

    def conn(self):
        if self.c is None:
            if self.https:
                import ssl
                ctx = ssl._create_unverified_context()
                self.c = http.client.HTTPSConnection(self.host, self.port, timeout=10, context=ctx)
            else:
                self.c = http.client.HTTPConnection(self.host, self.port, timeout=10)
        return self.c

    def request(self, method, path, body=None, ok=(200, 201)):
        while True:
            try:
                h = {"Content-Type": "application/json"}
                if self.a.token:
                    h["Authorization"] = "Bearer " + self.a.token
                c = self.conn()
                c.request(method, path, None if body is None else json.dumps(body), h)
                r = c.getresponse()
                data = r.read()
                if r.status in ok:
                    return data
                err = "%s %s: %d %s" % (method, path, r.status, data[:300])
            except (OSError, http.client.HTTPException) as e:
                err = "%s %s: %s" % (method, path, e)
                self.c = None
            if not self.a.retry:
                sys.exit(err)
            time.sleep(0.2)

    def key(self, o):
        md = o["metadata"]
        res = RESOURCE[o["kind"]]
        return "%s/objects/%s/%s%s" % (self.a.prefix.rstrip("/"), res, md["namespace"] + "/" if "namespace" in md else "",
                                       md["name"])

    def put(self, objs):
        if self.a.etcd and len(objs) > 100:  # etcd's --max-txn-ops defaults to 128
            for k in range(0, len(objs), 100):
                self.put(objs[k:k + 100])
            return
        if self.a.etcd:
            b64 = lambda s: base64.b64encode(s.encode()).decode()
            ops = [{"request_put": {"key": b64(self.key(o)), "value": b64(json.dumps(o, separators=(",", ":")))}}
                   for o in objs]
            self.request("POST", "/v3/kv/txn", {"success": ops})
        else:
            self.request("POST", "/fixture/apply", {"apiVersion": "v1", "kind": "List", "items": objs})

    def delete(self, objs):
        if self.a.etcd and len(objs) > 100:
            for k in range(0, len(objs), 100):
                self.delete(objs[k:k + 100])
            return
        if self.a.etcd:
            b64 = lambda s: base64.b64encode(s.encode()).decode()
            ops = [{"request_delete_range": {"key": b64(self.key(o))}} for o in objs]
            self.request("POST", "/v3/kv/txn", {"success": ops})
        else:
            # Whole batches of pods go as one DELETE per namespace on the list path (the server's
            # deletecollection, labelSelector batch=bN), which the fixture serves much faster than
            # one DELETE per pod.
            pods = {o["metadata"]["name"] for o in objs if o["kind"] == "Pod"}
            batches = {o["metadata"]["labels"]["batch"] for o in objs if o["kind"] == "Pod"}
            whole = [b for b in batches if all("p%d" % i in pods for i in range(int(b[1:]) * 100, int(b[1:]) * 100 + 100))]
            for b in whole:
                for n in range(NS):
                    self.request("DELETE", "/api/v1/namespaces/ns%d/pods?labelSelector=batch%%3D%s" % (n, b),
                                 ok=(200, 202, 404))
            done = {"p%d" % i for b in whole for i in range(int(b[1:]) * 100, int(b[1:]) * 100 + 100)}
            for o in objs:
                if o["kind"] == "Pod" and o["metadata"]["name"] in done:
                    continue
                md, res = o["metadata"], RESOURCE[o["kind"]]
                self.request("DELETE", "%s/namespaces/%s/%s/%s" % (API_PATH[res], md["namespace"], res, md["name"]),
                             ok=(200, 202, 404))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--etcd")
    p.add_argument("--prefix", default="/weft/network")
    p.add_argument("--api")
    p.add_argument("--token")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--pause", type=float, default=0)
    p.add_argument("--retry", action="store_true")
    p.add_argument("what")
    p.add_argument("op")
    p.add_argument("args", nargs="*")
    a = p.parse_args()
    s = Store(a)
    if a.what == "raw-etcd":
        b64 = lambda x: base64.b64encode(x.encode()).decode()
        s.request("POST", "/v3/kv/put", {"key": b64(a.op), "value": b64(a.args[0])})
        return
    if a.what == "rv":
        stats = json.loads(s.request("GET", "/fixture/stats"))
        if int(stats["resourceVersion"]) < int(a.args[0]):
            s.request("POST", "/fixture/advance", {"by": int(a.args[0]) - int(stats["resourceVersion"])})
        print(json.loads(s.request("GET", "/fixture/stats"))["resourceVersion"])
        return
    make = {"pods": pod, "namespaces": namespace, "policies": policy, "services": service}[a.what]
    lo, hi = int(a.args[0]), int(a.args[1])
    extra = a.args[2] if len(a.args) > 2 else None
    t_last = 0.0
    for i in range(lo, hi + 1, a.batch):
        objs = [make(j, extra) for j in range(i, min(hi, i + a.batch - 1) + 1)]
        if a.what == "services":
            objs = [o for j in range(i, min(hi, i + a.batch - 1) + 1) for o in (service(j, None), slice_(j, None))]
        t_last = time.time()
        if a.op == "create":
            s.put(objs)
        elif a.op == "delete":
            s.delete(objs)
        else:
            sys.exit("unknown op " + a.op)
        if a.pause:
            time.sleep(a.pause)
    print("%.6f" % t_last)


if __name__ == "__main__":
    main()
