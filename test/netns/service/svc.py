#!/usr/bin/env python3
# Servers and probes for test-weftd-services.sh.
#   svc.py serve NAME            TCP 8080 and UDP 5353: answer "NAME PEER-IP" to each connection/datagram
#                                (TCP 8080 over IPv6 too, where the namespace has IPv6)
#   svc.py tcp IP PORT [TIMEOUT] one connection (IPv4 or IPv6): prints the answer, "refused" or "timeout"
#   svc.py udp IP PORT [TIMEOUT] one datagram: prints the answer, "refused" or "timeout"
#   svc.py loop IP PORT SECONDS  a connection every 20 ms for SECONDS: "<monotonic start> <answer>" per line
#   svc.py uloop IP PORT SECONDS a datagram every 50 ms from ONE source port (a resolver's flow)
import socket
import sys
import threading
import time


def serve(name):
    t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    t.bind(("0.0.0.0", 8080))
    t.listen(128)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind(("0.0.0.0", 5353))

    def udp():
        while True:
            data, peer = u.recvfrom(2048)
            u.sendto(f"{name} {peer[0]}".encode(), peer)

    def accept(t):
        while True:
            c, peer = t.accept()
            try:
                c.sendall(f"{name} {peer[0]}\n".encode())
            finally:
                c.close()

    try:
        t6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        t6.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        t6.bind(("::", 8080))
        t6.listen(128)
        threading.Thread(target=accept, args=(t6,), daemon=True).start()
    except OSError:
        pass  # no IPv6 here
    threading.Thread(target=udp, daemon=True).start()
    print("ready", flush=True)
    accept(t)


def tcp(ip, port, timeout):
    s = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((ip, port))
        return s.recv(200).decode().strip() or "empty"
    except ConnectionRefusedError:
        return "refused"
    except (socket.timeout, TimeoutError):
        return "timeout"
    except OSError as e:
        return f"error-{e.errno}"
    finally:
        s.close()


def udp(ip, port, timeout):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.connect((ip, port))
        s.send(b"x")
        return s.recv(200).decode().strip()
    except ConnectionRefusedError:
        return "refused"
    except (socket.timeout, TimeoutError):
        return "timeout"
    finally:
        s.close()


def main():
    cmd = sys.argv[1]
    if cmd == "serve":
        serve(sys.argv[2])
    elif cmd in ("tcp", "udp"):
        timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 2.0
        print((tcp if cmd == "tcp" else udp)(sys.argv[2], int(sys.argv[3]), timeout))
    elif cmd == "uloop":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(0.3)
        s.connect((sys.argv[2], int(sys.argv[3])))
        end = time.monotonic() + float(sys.argv[4])
        while time.monotonic() < end:
            t0 = time.monotonic()
            try:
                s.send(b"x")
                r = s.recv(200).decode().split()[0]
            except (socket.timeout, TimeoutError):
                r = "timeout"
            except ConnectionRefusedError:
                r = "refused"
            print(f"{t0:.4f} {r}", flush=True)
            time.sleep(0.05)
    elif cmd == "loop":
        end = time.monotonic() + float(sys.argv[4])
        while time.monotonic() < end:
            t0 = time.monotonic()
            print(f"{t0:.4f} {tcp(sys.argv[2], int(sys.argv[3]), 1.0)}", flush=True)
            time.sleep(0.02)


main()
