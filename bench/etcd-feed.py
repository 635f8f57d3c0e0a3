#!/usr/bin/env python3
# etcd-feed.py URL PREFIX FROM TO BACKEND: writes remote-node leases FROM..TO into etcd in weftd's
# format (src/daemon/datastore/datastore-etcd.c) with /v3/kv/txn batches of up to 1000 puts (etcd must run
# with --max-txn-ops >= 1000). Lease i: subnet 100.64.0.0/10 + i*256 (/24), node "fake<i>",
# vxlan: publicIP 198.18.x.y, vtepMAC 02:00:00:00:hi:lo; host-gw: publicIP 10.99.(1 + i/256).(i%256)
# (on-link on the 10.99.0.0/16 underlay). Prints the subnet of lease TO and the wall-clock ms
# (CLOCK_REALTIME) just before the first request was sent.
import base64, http.client, json, sys, time, urllib.parse

url, prefix, lo, hi, backend = urllib.parse.urlparse(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
b64 = lambda s: base64.b64encode(s.encode()).decode()
c = http.client.HTTPConnection(url.hostname, url.port)

def lease(i):
    net = 0x64400000 + (i << 8)
    subnet = "%d.%d.%d.0" % (net >> 24, (net >> 16) & 255, (net >> 8) & 255)
    if backend == "vxlan":
        v = {"node": "fake%d" % i, "publicIP": "198.18.%d.%d" % (i >> 8, i & 255), "backend": "vxlan",
             "vtepMAC": "02:00:00:00:%02x:%02x" % (i >> 8, i & 255)}
    else:
        v = {"node": "fake%d" % i, "publicIP": "10.99.%d.%d" % (1 + (i >> 8), i & 255), "backend": "host-gw"}
    return "%s/subnets/%s-24" % (prefix, subnet), json.dumps(v), subnet

last = None
c.connect()
t_start = time.time()
i = lo
while i <= hi:
    ops = []
    for j in range(i, min(hi, i + 999) + 1):
        k, v, last = lease(j)
        ops.append({"request_put": {"key": b64(k), "value": b64(v)}})
    c.request("POST", "/v3/kv/txn", json.dumps({"success": ops}))
    r = c.getresponse()
    body = r.read()
    if r.status != 200:
        sys.exit("txn failed: %d %s" % (r.status, body[:300]))
    i += 1000
print(last + "/24", int(t_start * 1000))
