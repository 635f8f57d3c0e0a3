#!/usr/bin/env python3
# lb-assign.py ETCD_URL PREFIX N: creates N LoadBalancer Services in namespace "bench", one after the
# other, each through etcd's HTTP gateway, and times each from its put to the first read (every
# 5 ms) whose status.loadBalancer.ingress holds an address. Prints one figure (ms) per Service.
import base64
import json
import sys
import time
import urllib.request

url, prefix, n = sys.argv[1], sys.argv[2].rstrip("/"), int(sys.argv[3])


def call(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.load(r)


def b64(s):
    return base64.b64encode(s.encode()).decode()


for i in range(n):
    key = f"{prefix}/objects/services/bench/lb{i}"
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"namespace": "bench", "name": f"lb{i}"},
        "spec": {
            "type": "LoadBalancer",
            "clusterIP": f"10.96.{1 + i // 250}.{1 + i % 250}",
            "ports": [{"port": 80, "targetPort": 8080}],
        },
    }
    t0 = time.monotonic()
    call("/v3/kv/put", {"key": b64(key), "value": b64(json.dumps(svc))})
    while True:
        kvs = call("/v3/kv/range", {"key": b64(key)}).get("kvs", [])
        if kvs:
            obj = json.loads(base64.b64decode(kvs[0]["value"]))
            if obj.get("status", {}).get("loadBalancer", {}).get("ingress"):
                break
        if time.monotonic() - t0 > 30:
            sys.exit(f"lb{i}: no address after 30 s")
        time.sleep(0.005)
    print(f"{(time.monotonic() - t0) * 1000:.1f}", flush=True)
