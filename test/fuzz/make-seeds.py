#!/usr/bin/env python3
# Writes the binary seed inputs of the fuzz corpora (DHCP packets, netlink datagrams), which are
# easier to get right built from fields than typed by hand. The text corpora are plain files.
# Run from the repository root: test/fuzz/make-seeds.py
import os
import socket
import struct

C = 'test/fuzz/corpus'


def write(d, name, data):
    os.makedirs(f'{C}/{d}', exist_ok=True)
    with open(f'{C}/{d}/{name}', 'wb') as f:
        f.write(data)


# ---- DHCP ----
MAC = bytes.fromhex('0242ac110002')


def ip(s):
    return socket.inet_aton(s)


def opt(code, data):
    return bytes([code, len(data)]) + data


def bootp(mtype, yiaddr='10.22.0.5', xid=0x12345678, opts=b'', sname=b'', file=b'', end=True, op=2):
    h = struct.pack('!BBBBIHH4s4s4s4s16s64s128sI', op, 1, 6, 0, xid, 0, 0x8000, ip('0.0.0.0'), ip(yiaddr),
                    ip('10.22.0.1'), ip('0.0.0.0'), MAC.ljust(16, b'\0'), sname.ljust(64, b'\0'),
                    file.ljust(128, b'\0'), 0x63825363)
    o = opt(53, bytes([mtype])) + opts
    if end:
        o += b'\xff'
    return h + o


def lease_opts(lease=3600, t1=None, t2=None):
    o = opt(1, ip('255.255.255.0')) + opt(3, ip('10.22.0.1')) + opt(6, ip('10.22.0.1') + ip('8.8.8.8'))
    o += opt(51, struct.pack('!I', lease)) + opt(54, ip('10.22.0.1'))
    if t1 is not None:
        o += opt(58, struct.pack('!I', t1))
    if t2 is not None:
        o += opt(59, struct.pack('!I', t2))
    return o


def csum(b):
    if len(b) % 2:
        b += b'\0'
    s = sum(struct.unpack(f'!{len(b) // 2}H', b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def frame(payload, src='10.22.0.1', dst='255.255.255.255', dport=68):
    ulen = 8 + len(payload)
    iph = struct.pack('!BBHHHBBH4s4s', 0x45, 0x10, 20 + ulen, 0, 0, 64, 17, 0, ip(src), ip(dst))
    iph = iph[:10] + struct.pack('!H', csum(iph)) + iph[12:]
    udp = struct.pack('!HHHH', 67, dport, ulen, 0) + payload
    pseudo = ip(src) + ip(dst) + struct.pack('!BBH', 0, 17, ulen)
    c = csum(pseudo + udp) or 0xffff
    return iph + udp[:6] + struct.pack('!H', c) + udp[8:]


def records(*recs):
    return b''.join(bytes([ctl]) + struct.pack('!H', len(d)) + d for ctl, d in recs)


classless = opt(121, bytes([24]) + ip('10.30.0.0')[:3] + ip('10.22.0.254') + bytes([0]) + ip('10.22.0.1') +
                bytes([32]) + ip('1.2.3.4') + ip('0.0.0.0'))
static = opt(33, ip('10.40.0.0') + ip('10.22.0.254') + ip('192.168.7.0') + ip('10.22.0.253'))
offer = bootp(2, opts=lease_opts())
ack = bootp(5, opts=lease_opts(600, 300, 525) + classless)
write('dhcp', '01-offer', offer)
write('dhcp', '02-ack-classless', ack)
write('dhcp', '03-ack-static-routes', bootp(5, opts=lease_opts() + static))
write('dhcp', '04-nak', bootp(6, opts=opt(54, ip('10.22.0.1')) + opt(56, b'wrong network')))
# RFC 2132 overload: options continue in file (1) and sname (2).
write('dhcp', '05-overload', bootp(5, opts=opt(52, b'\x03') + opt(51, struct.pack('!I', 60)),
                                   file=opt(54, ip('10.22.0.1')) + b'\xff', sname=opt(1, ip('255.255.0.0')) + b'\xff'))
# RFC 3396: one long option split into two.
write('dhcp', '06-concatenated-121', bootp(5, opts=lease_opts() + classless[:6] + bytes([121, len(classless) - 6]) +
                                          classless[6:]))
write('dhcp', '07-no-end', bootp(2, opts=lease_opts(), end=False))
write('dhcp', '08-truncated-option', bootp(2, opts=lease_opts())[:-5])
write('dhcp', '09-bad-mask', bootp(5, opts=opt(1, ip('255.0.255.0')) + opt(51, struct.pack('!I', 60)) +
                                   opt(54, ip('10.22.0.1'))))
write('dhcp', '10-infinite-lease', bootp(5, opts=lease_opts(0xffffffff)))
write('dhcp', '11-frame-offer', frame(offer))
write('dhcp', '12-frame-other-port', frame(offer, dport=67))
write('dhcp', '13-frame-no-udp-csum', frame(offer)[:26] + b'\0\0' + frame(offer)[28:])
# A whole exchange: OFFER, ACK, then at T1 a renewing ACK, a NAK in REBINDING, STOP.
write('dhcp', '14-exchange', records((0x02, offer), (0x03, frame(bootp(5, opts=lease_opts(600)))),
                                     (0x0a, bootp(5, opts=lease_opts(600))), (0x0a, bootp(5, opts=lease_opts(700))),
                                     (0x0a, bootp(6, opts=b'')), (0x12, offer)))
write('dhcp', '15-exchange-bad-t1t2', records((0x02, offer), (0x02, bootp(5, opts=lease_opts(100, 90, 80))),
                                             (0x08, b''), (0x08, b''), (0x08, b''), (0x18, b'')))
write('dhcp', '16-request-from-client', bootp(3, op=1, opts=opt(50, ip('10.22.0.5'))))
write('dhcp', '17-classless-bad-width', bootp(5, opts=lease_opts() + opt(121, bytes([33]) + ip('1.2.3.4') * 2)))

# ---- netlink ----
NLM_F_MULTI, NLM_F_ACK_TLVS, NLM_F_CAPPED = 0x2, 0x200, 0x100


def attr(t, data):
    n = 4 + len(data)
    return struct.pack('=HH', n, t) + data + b'\0' * ((4 - n % 4) % 4)


def nest(t, *attrs):
    return attr(t | 0x8000, b''.join(attrs))


def u8(v): return struct.pack('=B', v)
def u16(v): return struct.pack('=H', v)
def u32(v): return struct.pack('=I', v)
def sz(s): return s.encode() + b'\0'


def msg(t, body, flags=NLM_F_MULTI, seq=1, pid=0):
    return struct.pack('=IHHII', 16 + len(body), t, flags, seq, pid) + body


def ifinfo(idx, family=0, flags=0x1043):
    return struct.pack('=BBHiII', family, 0, 1, idx, flags, 0)


RTM_NEWLINK, RTM_DELLINK, RTM_NEWADDR, RTM_NEWROUTE, RTM_DELROUTE, RTM_NEWNEIGH = 16, 17, 20, 24, 25, 28
RTM_NEWRULE, RTM_NEWQDISC, NLMSG_ERROR, NLMSG_DONE = 32, 36, 2, 3

vxlan = msg(RTM_NEWLINK, ifinfo(7) + attr(3, sz('weft.1')) + attr(4, u32(1450)) + attr(1, MAC) +
            attr(16, u8(6)) + attr(5, u32(0)) +
            nest(18, attr(1, sz('vxlan')), nest(2, attr(1, u32(1)), attr(15, struct.pack('!H', 4789)),
                                                  attr(4, ip('10.250.100.1')), attr(3, u32(2)))))
bridge = msg(RTM_NEWLINK, ifinfo(3) + attr(3, sz('cni0')) + attr(4, u32(1500)) + attr(20, sz('weft pods')) +
             nest(18, attr(1, sz('bridge')), nest(2, attr(7, u8(1)))))
veth = msg(RTM_NEWLINK, ifinfo(9) + attr(3, sz('veth1234')) + attr(10, u32(3)) + attr(5, u32(2)) +
           attr(37, u32(0)) + nest(18, attr(1, sz('veth'))))
vrf = msg(RTM_NEWLINK, ifinfo(11) + attr(3, sz('vrf-blue')) + nest(18, attr(1, sz('vrf')), nest(2, attr(1, u32(100)))))
macvlan = msg(RTM_NEWLINK, ifinfo(12) + attr(3, sz('mv0')) + nest(18, attr(1, sz('macvlan')), nest(2, attr(1, u32(4)))))
vlan = msg(RTM_NEWLINK, ifinfo(13) + attr(3, sz('eth0.100')) + nest(18, attr(1, sz('vlan')), nest(2, attr(1, u16(100)))))
brport = msg(RTM_NEWLINK, ifinfo(9, family=7) + attr(3, sz('veth1234')) + attr(10, u32(3)))
addr4 = msg(RTM_NEWADDR, struct.pack('=BBBBI', 2, 24, 0x80, 0, 3) + attr(1, ip('10.244.1.1')) + attr(2, ip('10.244.1.1')) +
            attr(3, sz('cni0')) + attr(8, u32(0x80)))
addr6 = msg(RTM_NEWADDR, struct.pack('=BBBBI', 10, 64, 0, 0, 3) + attr(1, socket.inet_pton(socket.AF_INET6, 'fd00:10:244:1::1')))


def rtmsg(family, dst_len, table=254, proto=0xfc, scope=0, rtype=1, flags=0):
    return struct.pack('=BBBBBBBBI', family, dst_len, 0, 0, table, proto, scope, rtype, flags)


route4 = msg(RTM_NEWROUTE, rtmsg(2, 24, flags=4) + attr(15, u32(254)) + attr(1, ip('10.244.2.0')) +
             attr(5, ip('10.250.100.2')) + attr(4, u32(7)) + attr(6, u32(100)) + attr(7, ip('10.244.1.1')) +
             nest(8, attr(2, u32(1400)), attr(8, u32(1360))))
route6 = msg(RTM_NEWROUTE, rtmsg(10, 64) + attr(15, u32(1000)) +
             attr(1, socket.inet_pton(socket.AF_INET6, 'fd00:10:244:2::')) +
             attr(5, socket.inet_pton(socket.AF_INET6, 'fe80::1')) + attr(4, u32(7)))
default = msg(RTM_DELROUTE, rtmsg(2, 0, proto=3) + attr(15, u32(254)) + attr(5, ip('10.250.100.254')) + attr(4, u32(2)))
neigh = msg(RTM_NEWNEIGH, struct.pack('=BBHiHBB', 2, 0, 0, 7, 0x80, 0, 1) + attr(1, ip('10.244.2.0')) +
            attr(2, bytes.fromhex('020000000002')))
fdb = msg(RTM_NEWNEIGH, struct.pack('=BBHiHBB', 7, 0, 0, 7, 0x80, 2, 0) + attr(2, bytes.fromhex('020000000002')) +
          attr(1, ip('10.250.100.2')))
rule = msg(RTM_NEWRULE, struct.pack('=BBBBBBBBI', 2, 0, 24, 0, 100, 0, 0, 1, 0) + attr(2, ip('10.244.1.5')) +
           attr(15, u32(100)) + attr(6, u32(1000)) + attr(21, u8(0xfc)))
tbf_qopt = struct.pack('=BBHhHI', 0, 0, 0, 0, 0, 125000) + struct.pack('=BBHhHI', 0, 0, 0, 0, 0, 0) + \
    struct.pack('=III', 1000, 80000, 1514)
qdisc = msg(RTM_NEWQDISC, struct.pack('=BBHiIII', 0, 0, 0, 7, 0x10000, 0xffffffff, 1) + attr(1, sz('tbf')) +
            nest(2, attr(1, tbf_qopt), attr(4, struct.pack('=Q', 125000))))
ingress = msg(RTM_NEWQDISC, struct.pack('=BBHiIII', 0, 0, 0, 7, 0xffff0000, 0xfffffff1, 1) + attr(1, sz('ingress')))
done = msg(NLMSG_DONE, struct.pack('=i', 0))


def error(err, orig=b'', tlvs=b'', capped=True):
    req = struct.pack('=IHHII', 16 + len(orig), 16, 5, 1, 0) + orig
    flags = (NLM_F_ACK_TLVS if tlvs else 0) | (NLM_F_CAPPED if capped else 0)
    return msg(NLMSG_ERROR, struct.pack('=i', err) + (req[:16] if capped else req) + tlvs, flags=flags)


write('netlink', '01-link-vxlan', vxlan)
write('netlink', '02-link-bridge-alias', bridge)
write('netlink', '03-link-veth', veth)
write('netlink', '04-link-vrf', vrf)
write('netlink', '05-link-macvlan-vlan', macvlan + vlan)
write('netlink', '06-link-bridge-port', brport)
write('netlink', '07-addr', addr4 + addr6)
write('netlink', '08-route4', route4)
write('netlink', '09-route6-default', route6 + default)
write('netlink', '10-neigh-fdb', neigh + fdb)
write('netlink', '11-rule', rule)
write('netlink', '12-qdisc-tbf-ingress', qdisc + ingress)
write('netlink', '13-error-extack', error(-17, tlvs=attr(1, sz('File exists')) + attr(2, u32(20))))
write('netlink', '14-error-uncapped', error(-22, orig=ifinfo(7) + attr(3, sz('x')), tlvs=attr(1, sz('Invalid')),
                                             capped=False))
write('netlink', '15-ack', error(0))
write('netlink', '16-dump', vxlan + bridge + addr4 + route4 + neigh + msg(RTM_DELLINK, ifinfo(9)) + done)
write('netlink', '17-truncated', (vxlan + route4)[:-7])
write('netlink', '18-bad-attr-len', vxlan[:20] + struct.pack('=HH', 200, 3) + vxlan[24:])

# ---- conntrack events (weftd --flow-log: fuzz-ct-event) ----
# ctnetlink: subsystem 1; IPCTNL_MSG_CT_NEW 0 (NLM_F_CREATE 0x400 | NLM_F_EXCL 0x200 on a NEW
# event), IPCTNL_MSG_CT_DELETE 2. CTA_TUPLE_ORIG 1, _REPLY 2, CTA_STATUS 3, CTA_COUNTERS_ORIG 9,
# _REPLY 10, CTA_ID 12, CTA_TIMESTAMP 20; CTA_TUPLE_IP 1 (V4_SRC 1, V4_DST 2, V6_SRC 3, V6_DST 4),
# CTA_TUPLE_PROTO 2 (NUM 1, SRC_PORT 2, DST_PORT 3); counters PACKETS 1, BYTES 2 (be64).


def nfgen(family):
    return struct.pack('=BBH', family, 0, 0)


def ct_tuple(t, src, dst, proto, sport, dport):
    fam = socket.AF_INET6 if ':' in src else socket.AF_INET
    a, b = (3, 4) if fam == socket.AF_INET6 else (1, 2)
    return nest(t, nest(1, attr(a, socket.inet_pton(fam, src)), attr(b, socket.inet_pton(fam, dst))),
                nest(2, attr(1, u8(proto)), attr(2, struct.pack('!H', sport)), attr(3, struct.pack('!H', dport))))


def ct_counters(t, packets, nbytes):
    return nest(t, attr(1, struct.pack('!Q', packets)), attr(2, struct.pack('!Q', nbytes)))


def ct_event(kind, family, *attrs):
    t, flags = ((1 << 8) | 0, 0x600) if kind == 'new' else ((1 << 8) | 2, 0)
    return msg(t, nfgen(family) + b''.join(attrs), flags=flags, seq=0)


write('ct-event', '01-new-dnat', ct_event('new', socket.AF_INET,
      ct_tuple(1, '10.244.0.11', '10.96.0.10', 6, 40112, 80), ct_tuple(2, '10.244.1.13', '10.244.0.11', 6, 8080, 40112),
      attr(3, struct.pack('!I', 0x188)), attr(12, struct.pack('!I', 0xdeadbeef))))
write('ct-event', '02-destroy-v6-counters', ct_event('destroy', socket.AF_INET6,
      ct_tuple(1, 'fd00:10:244::b', 'fd00:10:244:1::d', 17, 5353, 81),
      ct_tuple(2, 'fd00:10:244:1::d', 'fd00:10:244::b', 17, 81, 5353),
      ct_counters(9, 20, 20960), ct_counters(10, 19, 19912),
      nest(20, attr(1, struct.pack('!Q', 10**9)), attr(2, struct.pack('!Q', 125 * 10**7)))))
write('ct-event', '03-update-and-icmp', msg((1 << 8) | 0, nfgen(socket.AF_INET) + ct_tuple(1, '10.244.0.11', '10.244.0.12', 1, 0, 0) +
      ct_tuple(2, '10.244.0.12', '10.244.0.11', 1, 0, 0), flags=0, seq=0) + ct_event('new', socket.AF_INET,
      ct_tuple(1, '10.244.0.11', '10.244.0.12', 1, 0, 0), ct_tuple(2, '10.244.0.12', '10.244.0.11', 1, 0, 0)))
write('ct-event', '04-mixed-families', ct_event('new', socket.AF_INET,
      ct_tuple(1, '10.0.0.1', '10.0.0.2', 6, 1, 2), ct_tuple(2, '::2', '::1', 6, 2, 1)))
write('ct-event', '05-two-events', ct_event('new', socket.AF_INET,
      ct_tuple(1, '10.0.0.1', '10.0.0.2', 132, 1, 2), ct_tuple(2, '10.0.0.2', '10.0.0.1', 132, 2, 1)) +
      ct_event('destroy', socket.AF_INET, ct_tuple(1, '10.0.0.1', '10.0.0.2', 132, 1, 2),
               ct_tuple(2, '10.0.0.2', '10.0.0.1', 132, 2, 1), attr(9 | 0x8000, attr(2, b'\1\2'))))

# ---- etcd (JSON gateway responses carry keys and values in base64) ----
import base64
import json

S = '/weft/network/subnets/'


def b64(s):
    return base64.b64encode(s.encode()).decode()


def lease(node, pub, mac=None, subnet6=None, backend='vxlan'):
    d = {'node': node, 'publicIP': pub, 'backend': backend}
    if mac:
        d['vtepMAC'] = mac
    if subnet6:
        d['subnet6'] = subnet6
    return json.dumps(d, separators=(',', ':'))


def kv(key, value, create=5, mod=7):
    d = {'key': b64(key), 'create_revision': str(create), 'mod_revision': str(mod), 'version': '1', 'lease': '7587'}
    if value is not None:
        d['value'] = b64(value)
    return d


def js(o):
    return json.dumps(o, indent=1).encode()


l2 = lease('node2', '10.250.100.2', '02:00:00:00:00:02', 'fd00:10:244:2::/64')
l3 = lease('node3', '10.250.100.3', '02:00:00:00:00:03', backend='host-gw')
write('etcd', '01-range', js({'header': {'cluster_id': '1', 'revision': '42'}, 'count': '3', 'kvs': [
    kv(S + '10.244.2.0-24', l2, 3), kv(S + '10.244.3.0-24', l3, 4),
    kv(S + '10.244.4.0-24', lease('node4', '10.250.100.4', '02:00:00:00:00:04'), 9)]}))
# Issue 7's attacks: a lease outside the network, one inside another's subnet, a stolen node name.
write('etcd', '02-range-conflicts', js({'header': {'revision': 50}, 'kvs': [
    kv(S + '10.250.100.0-24', lease('fake', '10.250.100.50', '02:00:00:00:00:50'), 10),
    kv(S + '10.244.2.0-24', l2, 3), kv(S + '10.244.2.0-25', lease('intruder', '10.250.100.9', '02:00:00:00:00:09'), 11),
    kv(S + '10.244.7.0-24', lease('node2', '10.250.100.7', '02:00:00:00:00:07'), 12),
    kv(S + '10.244.8.0-24', lease('node8', '10.250.100.8', '02:00:00:00:00:02'), 13),
    kv(S + '10.244.1.0-24', lease('node1', '10.250.100.1'), 1)]}))
write('etcd', '03-watch-put-delete', js({'result': {'header': {'revision': '60'}, 'events': [
    {'kv': kv(S + '10.244.5.0-24', lease('node5', '10.250.100.5', '02:00:00:00:00:05'), 55)},
    {'type': 'DELETE', 'kv': kv(S + '10.244.3.0-24', None, 0, 58)}]}}))
write('etcd', '04-watch-created', js({'result': {'header': {'revision': '61'}, 'created': True}}))
write('etcd', '05-watch-canceled', js({'result': {'canceled': True, 'compact_revision': '40',
                                                  'cancel_reason': 'mvcc: required revision has been compacted'}}))
write('etcd', '06-txn-failed', js({'header': {'revision': '70'}, 'succeeded': False, 'responses': [
    {'response_range': {'kvs': [kv(S + '10.244.6.0-24', lease('node6', '10.250.100.6'), 66)], 'count': '1'}}]}))
write('etcd', '07-txn-succeeded', js({'header': {'revision': '71'}, 'succeeded': True,
                                     'responses': [{'response_put': {'header': {'revision': '71'}}}]}))
write('etcd', '08-keepalive', js({'result': {'ID': '7587', 'TTL': '60'}}))
write('etcd', '09-keepalive-error', js({'error': {'grpc_code': 5, 'message': 'requested lease not found'}}))
write('etcd', '10-bad-base64', b'{"kvs": [{"key": "!!!", "value": "e30="}], "header": {"revision": "x"}}')
write('etcd', '11-kv-lease', (S + '10.244.9.0-24\n' + lease('node9', '10.250.100.9', '02:00:00:00:00:09',
                                                            'fd00:10:244:9::/64')).encode())
write('etcd', '12-kv-bad-fields', (S + '10.244.10.0-24\n{"node":"Bad_Name","publicIP":"224.0.0.1","vtepMAC":'
                                   '"ff:ff:ff:ff:ff:ff","subnet6":"10.0.0.0/8","backend":"vxlan-with-a-long-name"}').encode())
write('etcd', '13-kv-bad-key', (S + '10.244.11.5-33\n{"node":"n"}').encode())
write('etcd', '14-kv-long-name', (S + '10.244.12.0-24\n{"node":"' + 'a' * 250 + '.example.com","publicIP":'
                                  '"10.250.100.12"}').encode())
write('etcd', '15-kv-not-object', (S + 'fd00:10:244:3::-64\n[1,2]').encode())

# ---- Kubernetes ----


def knode(name, cidrs=None, pub=None, mac=None, backend='vxlan', ts='2026-11-25T10:00:00Z', cidr=None):
    ann = {}
    if pub:
        ann['weft.dev/public-ip' + ('6' if ':' in pub else '')] = pub
        ann['weft.dev/backend-type'] = backend
    if mac:
        ann['weft.dev/vtep-mac'] = mac
    spec = {}
    if cidrs is not None:
        spec['podCIDRs'] = cidrs
    if cidr:
        spec['podCIDR'] = cidr
    return {'kind': 'Node', 'apiVersion': 'v1', 'metadata': {'name': name, 'uid': '1b4e28ba', 'resourceVersion': '812',
            'creationTimestamp': ts, 'annotations': ann, 'labels': {'kubernetes.io/hostname': name}}, 'spec': spec,
            'status': {'addresses': [{'type': 'InternalIP', 'address': pub or ''}]}}


n2 = knode('node2', ['10.244.2.0/24', 'fd00:10:244:2::/64'], '10.250.100.2', '02:00:00:00:00:02')
write('kube', '01-nodelist', js({'kind': 'NodeList', 'apiVersion': 'v1', 'metadata': {'resourceVersion': '900'},
                                 'items': [n2, knode('node3', ['10.244.3.0/24'], '10.250.100.3', backend='host-gw'),
                                           knode('node4', cidr='10.244.4.0/24', pub='10.250.100.4',
                                                 mac='02:00:00:00:00:04'),
                                           knode('not-ready', ['10.244.5.0/24'])]}))
write('kube', '02-nodelist-conflicts', js({'kind': 'NodeList', 'metadata': {'resourceVersion': '901'}, 'items': [
    n2, knode('node7', ['10.244.2.0/24'], '10.250.100.7', '02:00:00:00:00:07', ts='2026-11-25T11:00:00Z'),
    knode('node8', ['10.244.8.0/24'], '10.250.100.8', '02:00:00:00:00:02', ts='2026-11-25T09:00:00Z'),
    knode('node9', ['10.250.100.0/24'], '10.250.100.9'), knode('node1', ['10.244.1.0/24'], '10.250.100.1'),
    knode('v6only', ['fd00:10:244:6::/64'], 'fd00::6')]}))
write('kube', '03-watch-stream', b'\n'.join(json.dumps(e).encode() for e in [
    {'type': 'ADDED', 'object': knode('node5', ['10.244.5.0/24'], '10.250.100.5', '02:00:00:00:00:05')},
    {'type': 'MODIFIED', 'object': knode('node5', ['10.244.5.0/24'], '10.250.100.55', '02:00:00:00:00:05')},
    {'type': 'BOOKMARK', 'object': {'kind': 'Node', 'metadata': {'resourceVersion': '950'}}},
    {'type': 'DELETED', 'object': knode('node5')},
    {'type': 'ERROR', 'object': {'kind': 'Status', 'code': 410, 'reason': 'Expired', 'message': 'too old'}}]) + b'\n')
write('kube', '04-node-bad-annotations', js(knode('Node_X', ['10.244.10.0/24', 'garbage', '10.244.11.0/24'],
                                                  '255.255.255.255', 'zz:00:00:00:00:00')))
write('kube', '05-node-long-name', js(knode('n' * 253, ['10.244.12.0/24'], '10.250.100.12',
                                            ts='not-a-timestamp')))
write('kube', '06-node-no-name', b'{"metadata": {"annotations": {"weft.dev/public-ip": "10.0.0.1"}}, "spec": '
      b'{"podCIDRs": "10.244.0.0/24"}}')
write('kube', '07-event-wrong-types', b'{"type": 1, "object": {"metadata": {"name": ["x"], "creationTimestamp": 5}}}')
