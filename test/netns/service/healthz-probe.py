#!/usr/bin/env python3
# healthz-probe.py URL STOPFILE: GET URL every ~100 ms, each with a 1 s bound, until STOPFILE exists.
# One line per probe ("<ms> <status>", status "timeout"/"error" when there was no answer in time),
# then "probes N failures F max_ms M p50_ms P" (a failure: no 200 within 1 s).
import os
import sys
import time
import urllib.error
import urllib.request

url, stop = sys.argv[1], sys.argv[2]
lat, fails = [], 0
while not os.path.exists(stop):
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=1.0) as r:
            r.read()
            status = str(r.status)
    except urllib.error.HTTPError as e:
        status = str(e.code)
    except Exception:
        status = "timeout"
    ms = (time.monotonic() - t0) * 1000
    lat.append(ms)
    if status != "200" or ms > 1000:
        fails += 1
    print("%.1f %s" % (ms, status), flush=True)
    time.sleep(max(0.0, 0.1 - (time.monotonic() - t0)))
lat.sort()
print("probes %d failures %d max_ms %.1f p50_ms %.1f" % (len(lat), fails, lat[-1] if lat else 0,
                                                        lat[len(lat) // 2] if lat else 0), flush=True)
