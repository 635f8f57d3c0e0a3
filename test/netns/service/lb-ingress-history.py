#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Was a LoadBalancer address ever held by two Services at once? Replays a recorded watch of the
Services, event by event, and prints every moment two Services (not sharing by allow-shared-ip)
held one ingress IP, one line each; nothing if none. Prints the number of events read to stderr.

  lb-ingress-history.py kube FILE   FILE: a Kubernetes watch stream (?watch=1&resourceVersion=0:
                                    the current objects first, as ADDED), one event a line
  lb-ingress-history.py etcd FILE   FILE: `etcdctl watch --prefix --rev 1 -w json` of the Services'
                                    keys (every version since the start)
"""
import base64
import json
import sys


def kube_events(f):
    for line in f:
        line = line.strip()
        if not line:
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if ev.get("type") in ("ADDED", "MODIFIED", "DELETED"):
            o = ev.get("object") or {}
            md = o.get("metadata") or {}
            yield "%s/%s" % (md.get("namespace", ""), md.get("name", "")), None if ev["type"] == "DELETED" else o


def etcd_events(f):
    # etcdctl -w json prints one JSON document per watch response, possibly over several lines
    dec, buf = json.JSONDecoder(), f.read()
    i = 0
    while True:
        while i < len(buf) and buf[i].isspace():
            i += 1
        if i >= len(buf):
            return
        try:
            resp, i = dec.raw_decode(buf, i)
        except ValueError:
            return
        for ev in resp.get("Events") or []:
            kv = ev.get("kv") or {}
            key = base64.b64decode(kv.get("key", "")).decode()
            if ev.get("type") in (1, "DELETE"):
                yield key, None
            else:
                try:
                    yield key, json.loads(base64.b64decode(kv.get("value", "")))
                except ValueError:
                    yield key, None


def main():
    mode, path = sys.argv[1], sys.argv[2]
    state, seen_dups, n = {}, [], 0
    with open(path) as f:
        for key, obj in (kube_events(f) if mode == "kube" else etcd_events(f)):
            n += 1
            shared = obj and ((obj.get("metadata") or {}).get("annotations") or {}).get("weft.dev/allow-shared-ip")
            if obj is None or shared:
                state.pop(key, None)
            else:
                ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
                state[key] = [i["ip"] for i in ingress if isinstance(i, dict) and i.get("ip")]
            holders = {}
            for k, ips in state.items():
                for ip in ips:
                    holders.setdefault(ip, set()).add(k)
            for ip, ks in sorted(holders.items()):
                if len(ks) > 1:
                    line = "%s held by %s (event %d)" % (ip, " and ".join(sorted(ks)), n)
                    if not any(d.split(" (event")[0] == line.split(" (event")[0] for d in seen_dups):
                        seen_dups.append(line)
    print("\n".join(seen_dups))
    print("%d events" % n, file=sys.stderr)


if __name__ == "__main__":
    main()
