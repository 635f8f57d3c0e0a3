#!/usr/bin/env python3
# arp-probe.py IFACE SENDER-IP TARGET-IP [SECONDS]: broadcasts one ARP request for TARGET-IP and
# prints the sender MAC of every reply heard within SECONDS (default 1), one per line, sorted
# (test-weftd-lb-l2.sh: exactly one node answers for a LoadBalancer address).
import socket
import struct
import sys
import time

ifc, sender, target = sys.argv[1], socket.inet_aton(sys.argv[2]), socket.inet_aton(sys.argv[3])
wait = float(sys.argv[4]) if len(sys.argv) > 4 else 1.0
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.bind((ifc, 0))
mac = s.getsockname()[4]
s.send(b"\xff" * 6 + mac + b"\x08\x06" + struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + mac + sender + b"\x00" * 6 + target)
s.settimeout(0.05)
seen = set()
end = time.monotonic() + wait
while time.monotonic() < end:
    try:
        f = s.recv(128)
    except (socket.timeout, TimeoutError):
        continue
    if len(f) >= 42 and f[12:14] == b"\x08\x06" and struct.unpack("!H", f[20:22])[0] == 2 and f[28:32] == target:
        seen.add(f[22:28].hex(":"))
print("\n".join(sorted(seen)))
