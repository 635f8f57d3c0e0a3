#!/usr/bin/env bash
# weft-test: timeout 1200
# weft-test: no-san (288-cell tables for 6-7 minutes plain; the sanitizer pass takes the same policy compiler and sync in test-policy-lifecycle, -drops, -ipv6 and unit/test-policy-compile)
# NetworkPolicy enforced by weftd across nodes, checked cell by cell against an independent model
# (test/lib/policy-truth-table-lib.sh: namespaces x, y, z × pods a, b, c over 2 nodes, 288 cells per case,
# the table netpol.py computes from the spec). This half of Kubernetes' netpol e2e suite: ports
# (numbers, names, ranges, protocol only), protocols (an SCTP or UDP rule must not open TCP), egress
# (selectors, ipBlock with except, named ports, client-side deny), and the cases of several steps:
# stacked policies, updates, allow-all precedence, deletion, ingress and egress set independently.
# test-policy-truth-table.sh has the other half; policy/E2E-CASES.md maps every upstream case.
#   POLICY_BACKEND=host-gw|vxlan (default host-gw; test-policy-e2e-vxlan.sh sets vxlan)
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/policy-truth-table-lib.sh"

tt_setup

case_ "no policy: everything" '[]'

# ---- ports and protocols (SCTP: the kernel here has no SCTP sockets, so an SCTP rule is checked
# for what it must not do: open TCP or UDP, or leave its pod unisolated)
case_ "x/a only on port 81 TCP" "[$(P x p81 '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"ports":[{"port":81}]}]}')]"
Y81() { P x "y-81-${1,,}" "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[$NAME_Y],\"ports\":[{\"port\":81,\"protocol\":\"$1\"}]}]}"; }
case_ "x/a from namespace y on 81 TCP" "[$(Y81 TCP)]"
case_ "stacked: + x/a from namespace y on 80 TCP" "[$(Y81 TCP),$(P x y-80 "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[$NAME_Y],\"ports\":[{\"port\":80,\"protocol\":\"TCP\"}]}]}")]"
case_ "x/a from namespace y on 81 UDP" "[$(Y81 UDP)]"
case_ "x/a from namespace y on 81 SCTP: isolated for TCP and UDP" "[$(Y81 SCTP)]"
case_ "x/a SCTP-only rule still isolates it" "[$(P x sctp '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"ports":[{"port":80,"protocol":"SCTP"}]}]}')]"
case_ "x default deny + x/a on SCTP 81: TCP 81 stays denied" "[$(P x deny "$ALL"),$(P x sctp-81 "{\"podSelector\":$SEL_A,\"ingress\":[{\"ports\":[{\"port\":81,\"protocol\":\"SCTP\"}]}]}")]"
case_ "x/a only on port 81 UDP" "[$(P x udp-81 "{\"podSelector\":$SEL_A,\"ingress\":[{\"ports\":[{\"port\":81,\"protocol\":\"UDP\"}]}]}")]"
case_ "x/a any port of protocol TCP" "[$(P x by-proto "{\"podSelector\":$SEL_A,\"ingress\":[{\"ports\":[{\"protocol\":\"TCP\"}]}]}")]"
case_ "x on named port serve-81-tcp (protocol defaults to TCP)" "[$(P x named-81 '{"podSelector":{},"ingress":[{"ports":[{"port":"serve-81-tcp"}]}]}')]"
case_ "x on named port serve-80-udp" "[$(P x named '{"podSelector":{},"ingress":[{"ports":[{"port":"serve-80-udp","protocol":"UDP"}]}]}')]"
case_ "x/a from namespace y on named port serve-80-tcp" "[$(P x y-named-80 "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[$NAME_Y],\"ports\":[{\"port\":\"serve-80-tcp\",\"protocol\":\"TCP\"}]}]}")]"
case_ "x on 80-81 UDP (endPort)" "[$(P x range '{"podSelector":{},"ingress":[{"ports":[{"port":80,"endPort":81,"protocol":"UDP"}]}]}')]"

# ---- egress
case_ "x/a default deny egress" "[$(P x a-no-egress "{\"podSelector\":$SEL_A,\"policyTypes\":[\"Egress\"]}")]"
case_ "y egress only to x on 80 TCP" "[$(P y out '{"podSelector":{},"policyTypes":["Egress"],"egress":[{"to":[{"namespaceSelector":{"matchLabels":{"ns":"x"}}}],"ports":[{"port":80}]}]}')]"
case_ "egress named port serve-81-tcp from z" "[$(P z named-out '{"podSelector":{},"policyTypes":["Egress"],"egress":[{"ports":[{"port":"serve-81-tcp"}]}]}')]"
case_ "x/a egress to pods a of namespace y" "[$(P x a-to-ya "{\"podSelector\":$SEL_A,\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[$NAME_Y_PODS_A]}]}")]"
case_ "client-side deny: x/a egress to y/a only, y/a and y/b allow x/a" "[$(P x a-to-ya "{\"podSelector\":$SEL_A,\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[$NAME_Y_PODS_A]}]}"),$(P y a-from-xa "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[$NAME_X_PODS_A]}]}"),$(P y b-from-xa "{\"podSelector\":{\"matchLabels\":{\"pod\":\"b\"}},\"ingress\":[{\"from\":[$NAME_X_PODS_A]}]}")]"
case_ "x/a egress to namespaces NotIn (y) by name" "[$(P x a-not-y "{\"podSelector\":$SEL_A,\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\",\"operator\":\"NotIn\",\"values\":[\"y\"]}]}}]}]}")]"
case_ "x/a ingress from pods b + egress on port 80 (one policy, both types)" "[$(P x both "{\"podSelector\":$SEL_A,\"policyTypes\":[\"Egress\",\"Ingress\"],\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"b\"}}}]}],\"egress\":[{\"ports\":[{\"port\":80}]}]}")]"
ipb=$(ip_of y/b)
case_ "y egress to ipBlock of y/b only" "[$(P y out-b "{\"podSelector\":{},\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"$ipb/32\"}}]}]}")]"
ipxb=$(ip_of x/b)
CIDR_EXCEPT="{\"podSelector\":$SEL_A,\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"10.0.0.0/8\",\"except\":[\"$ipxb/32\"]}}]}]}"
CIDR_XB="{\"podSelector\":$SEL_A,\"policyTypes\":[\"Egress\"],\"egress\":[{\"to\":[{\"ipBlock\":{\"cidr\":\"$ipxb/32\"}}]}]}"
case_ "x/a egress to 10.0.0.0/8 except x/b" "[$(P x a-cidr "$CIDR_EXCEPT")]"
case_ "+ x/a egress to x/b/32 (one policy's except, another's cidr)" "[$(P x a-cidr "$CIDR_EXCEPT"),$(P x a-cidr-xb "$CIDR_XB")]"
case_ "policy update: x/a egress only to x/b/32" "[$(P x a-cidr "$CIDR_XB")]"

# ---- several steps: updates, allow-all precedence, deletion, ingress and egress independently
case_ "x allow all ingress (empty rule)" "[$(P x allow-all '{"podSelector":{},"ingress":[{}]}')]"
case_ "policy update: x allow-all becomes deny-all (ingress: [])" "[$(P x allow-all '{"podSelector":{},"policyTypes":["Ingress"],"ingress":[]}')]"
IN80=$(P x in-80 '{"podSelector":{},"ingress":[{"ports":[{"port":80}]}]}')
case_ "x ingress on port 80 only" "[$IN80]"
case_ "+ x allow all ingress: it takes precedence" "[$IN80,$(P x in-all '{"podSelector":{},"ingress":[{}]}')]"
OUT80=$(P x out-80 '{"podSelector":{},"policyTypes":["Egress"],"egress":[{"ports":[{"port":80}]}]}')
case_ "x egress on port 80 only" "[$OUT80]"
case_ "+ x allow all egress: it takes precedence" "[$OUT80,$(P x out-all '{"podSelector":{},"policyTypes":["Egress"],"egress":[{}]}')]"
case_ "x default deny ingress and egress" "[$(P x deny-all '{"podSelector":{},"policyTypes":["Ingress","Egress"]}')]"
case_ "deny-all deleted: everything again" '[]'
AOUT=$(P x a-out-all "{\"podSelector\":$SEL_A,\"policyTypes\":[\"Egress\"],\"egress\":[{}]}")
case_ "x/a allow all egress" "[$AOUT]"
case_ "+ x/a default deny ingress: its egress stays open" "[$AOUT,$(P x a-no-ingress "{\"podSelector\":$SEL_A,\"policyTypes\":[\"Ingress\"]}")]"
case_ "cleanup: no policy" '[]'

tt_finish
