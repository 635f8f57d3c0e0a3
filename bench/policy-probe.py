#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TCP probes for bench/policy.sh, run inside a pod's namespace.

  policy-probe.py serve PORT...          listen (accept and close); prints "ready"
  policy-probe.py check IP PORT          exit 0 if a connection is set up within 200 ms, 1 if not
  policy-probe.py connect IP PORT N      N connections one after the other (100 more first, not counted):
                                         prints the median and p90 of connect() in µs (each a new
                                         connection: its SYN meets the policy chains)
  policy-probe.py until ok|fail IP PORT TIMEOUT
      Establishes that the verdict is the opposite now (else exit 2), prints "ready N" (N: the tries
      of 200 ms that took), then starts a
      non-blocking connect every 5 ms and prints the CLOCK_REALTIME start of the first attempt that
      got the wanted verdict: ok = connected within 50 ms of its start (a connection that completes
      later rode a retransmitted SYN and says nothing about when it was sent), fail = not connected
      within 50 ms, it and the next three attempts. Exit 1 after TIMEOUT s without the verdict.
"""
import errno, os, selectors, socket, sys, time

WINDOW = 0.05
STEP = 0.005


def attempt(ip, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setblocking(False)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    err = s.connect_ex((ip, port))
    if err not in (0, errno.EINPROGRESS):
        s.close()
        return None
    return s


def check(ip, port, wait=0.2):
    s = attempt(ip, port)
    if s is None:
        return False
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_WRITE)
    ok = bool(sel.select(wait)) and s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0
    s.close()
    return ok


def until(want, ip, port, timeout):
    # the opposite verdict now: "ok" must fail twice in a row; "fail" must pass once in 15 tries of
    # 200 ms (a lost SYN on a loaded machine is no verdict); "ready N" tells how many tries it took
    tries = [check(ip, port) for _ in range(2)] if want == "ok" else []
    if want == "fail":
        for _ in range(15):
            tries.append(check(ip, port))
            if tries[-1]:
                break
    if (want == "ok" and any(tries)) or (want == "fail" and not any(tries)):
        print("already %s" % want, flush=True)
        sys.exit(2)
    print("ready %d" % len(tries), flush=True)
    sel = selectors.DefaultSelector()
    pending = {}  # socket -> start
    results = []  # (start, connected) in start order, once known
    end = time.time() + timeout
    nxt = time.time()
    while time.time() < end:
        now = time.time()
        if now >= nxt:
            s = attempt(ip, port)
            if s is not None:
                pending[s] = now
                sel.register(s, selectors.EVENT_WRITE)
            nxt = now + STEP
        for key, _ in sel.select(max(0.0, min(nxt - time.time(), 0.005))):
            s = key.fileobj
            t0 = pending.pop(s)
            sel.unregister(s)
            ok = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0 and time.time() - t0 <= WINDOW
            results.append((t0, ok))
            s.close()
        now = time.time()
        for s, t0 in list(pending.items()):
            if now - t0 > WINDOW:
                del pending[s]
                sel.unregister(s)
                s.close()
                results.append((t0, False))
        results.sort()
        # a verdict is settled for attempts older than the window
        if want == "ok":
            oldest = min(pending.values(), default=float("inf"))
            for t0, ok in results:
                if ok and t0 <= oldest:
                    print("%.6f" % t0, flush=True)
                    return 0
        else:
            for k in range(len(results) - 3):
                if not any(ok for _, ok in results[k:k + 4]):
                    print("%.6f" % results[k][0], flush=True)
                    return 0
    return 1


def connect(ip, port, n):
    lat = []
    for k in range(n + 100):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.settimeout(1)
        t0 = time.perf_counter()
        s.connect((ip, port))
        t1 = time.perf_counter()
        s.close()
        if k >= 100:
            lat.append((t1 - t0) * 1e6)
    lat.sort()
    print("%.1f %.1f" % (lat[len(lat) // 2], lat[int(len(lat) * 0.9)]))
    return 0


def serve(ports):
    sel = selectors.DefaultSelector()
    for p in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", p))
        s.listen(4096)
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    print("ready", flush=True)
    while True:
        for key, _ in sel.select():
            try:
                c, _ = key.fileobj.accept()
                c.close()
            except OSError:
                pass


def main():
    cmd = sys.argv[1]
    if cmd == "serve":
        serve([int(p) for p in sys.argv[2:]])
    elif cmd == "connect":
        sys.exit(connect(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    elif cmd == "check":
        sys.exit(0 if check(sys.argv[2], int(sys.argv[3])) else 1)
    elif cmd == "until":
        sys.exit(until(sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])))
    sys.exit("policy-probe.py: unknown command " + cmd)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
