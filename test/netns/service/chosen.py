#!/usr/bin/env python3
"""The endpoints a Service chain of weft's can choose, read from `nft -j list table inet weft`
on stdin: one "<addr> <port>" line each. Knows the three shapes service-compile.h describes: one
`dnat to numgen random mod N offset B map @svc-eps...` rule (the map's keys B..B+N-1), a plain
`dnat to A:P`, and the endpoint-chain cascade (`goto <chain>/ep/<addr>/<port>`).
  chosen.py CHAIN"""
import json
import sys

chain = sys.argv[1]
objs = json.load(sys.stdin)["nftables"]
maps = {}
for o in objs:
    m = o.get("map")
    if m:
        maps[m["name"]] = m.get("elem", [])


def walk(x, found):
    if isinstance(x, dict):
        if "numgen" in x:
            found.setdefault("numgen", x["numgen"])
        if "map" in x and isinstance(x["map"], dict) and isinstance(x["map"].get("data"), str):
            found.setdefault("map", x["map"]["data"].lstrip("@"))
        if "dnat" in x and isinstance(x["dnat"], dict):
            found.setdefault("dnat", x["dnat"])
        if "goto" in x and isinstance(x["goto"], dict):
            found.setdefault("gotos", []).append(x["goto"]["target"])
        for v in x.values():
            walk(v, found)
    elif isinstance(x, list):
        for v in x:
            walk(v, found)


out = []
for o in objs:
    r = o.get("rule")
    if not r or r["chain"] != chain:
        continue
    f = {}
    walk(r["expr"], f)
    if "numgen" in f and "map" in f:
        lo = f["numgen"].get("offset", 0)
        hi = lo + f["numgen"]["mod"]
        for e in maps.get(f["map"], []):
            k, v = e
            if lo <= k < hi:
                out.append(f'{v["concat"][0]} {v["concat"][1]}')
    elif "dnat" in f and isinstance(f["dnat"].get("addr"), str):
        out.append(f'{f["dnat"]["addr"]} {f["dnat"]["port"]}')
    for g in f.get("gotos", []):
        if "/ep/" in g:
            a, p = g.split("/ep/")[1].split("/")[:2]
            out.append(f'{a.replace("_", ":")} {p}')
print("\n".join(sorted(set(out))))
