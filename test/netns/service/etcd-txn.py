#!/usr/bin/env python3
# etcd-txn.py URL: puts every "KEY<TAB>VALUE" line of stdin in ONE etcd transaction (/v3/kv/txn), as
# a writer that wants its objects to land together (etcd must allow that many ops: --max-txn-ops).
import base64
import http.client
import json
import sys
import urllib.parse

url = urllib.parse.urlparse(sys.argv[1])
b64 = lambda s: base64.b64encode(s.encode()).decode()
ops = []
for line in sys.stdin:
    line = line.rstrip("\n")
    if not line:
        continue
    k, v = line.split("\t", 1)
    ops.append({"requestPut": {"key": b64(k), "value": b64(v)}})
c = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
c.request("POST", "/v3/kv/txn", json.dumps({"success": ops}), {"Content-Type": "application/json"})
r = c.getresponse()
body = r.read().decode()
if r.status != 200 or "error" in json.loads(body):
    sys.exit("txn refused: %d %s" % (r.status, body[:300]))
print(len(ops))
