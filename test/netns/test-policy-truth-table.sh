#!/usr/bin/env bash
# weft-test: timeout 1200
# weft-test: no-san (288-cell tables for 6-7 minutes plain; the sanitizer pass takes the same policy compiler and sync in test-policy-lifecycle, -drops, -ipv6 and unit/test-policy-compile)
# NetworkPolicy enforced by weftd across nodes, checked cell by cell against an independent model
# (test/lib/policy-truth-table-lib.sh: namespaces x, y, z × pods a, b, c over 2 nodes, 288 cells per case,
# the table netpol.py computes from the spec). This half of Kubernetes' netpol e2e suite: default
# deny, pod and namespace selectors (matchLabels, matchExpressions, AND within a peer, OR across
# peers), ipBlock on ingress, policies combining, update and removal, and pod and namespace label
# changes. test-policy-e2e.sh has the other half; policy/E2E-CASES.md maps every upstream case.
#   POLICY_BACKEND=host-gw|vxlan (default host-gw; test-policy-truth-table-vxlan.sh sets vxlan)
. "$(dirname "$0")/../lib/lib.sh"
. "$(dirname "$0")/../lib/weft-cluster-lib.sh"
. "$(dirname "$0")/../lib/policy-truth-table-lib.sh"

tt_setup

case_ "no policy: everything" '[]'
case_ "default deny ingress in x" "[$(P x deny "$ALL")]"
case_ "default deny egress in y" "[$(P y deny '{"podSelector":{},"policyTypes":["Egress"]}')]"
case_ "default deny both in z" "[$(P z deny '{"podSelector":{},"policyTypes":["Ingress","Egress"]}')]"
case_ "allow all ingress in x (empty rule) over a deny" "[$(P x deny "$ALL"),$(P x all '{"podSelector":{},"ingress":[{}]}')]"
case_ "x default deny + x/a from every pod of every namespace" "[$(P x deny "$ALL"),$(P x all-to-a "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[{\"podSelector\":{},\"namespaceSelector\":{}}]}]}")]"

# ---- selectors
case_ "x/a from pods b of x only" "[$(P x a-from-b '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"from":[{"podSelector":{"matchLabels":{"pod":"b"}}}]}]}')]"
case_ "x/a from pods In (b) (matchExpressions)" "[$(P x in-b "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[{\"podSelector\":{\"matchExpressions\":[{\"key\":\"pod\",\"operator\":\"In\",\"values\":[\"b\"]}]}}]}]}")]"
case_ "x/a from pods b or pods c (two podSelector peers)" "[$(P x b-or-c "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"b\"}}},{\"podSelector\":{\"matchLabels\":{\"pod\":\"c\"}}}]}]}")]"
case_ "x from its own namespace only (empty podSelector peer)" "[$(P x own-ns '{"podSelector":{},"ingress":[{"from":[{"podSelector":{}}]}]}')]"
case_ "x/a from namespace y" "[$(P x a-from-y "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[$NS_Y]}]}")]"
case_ "x/a from namespace y by name label (matchLabels)" "[$(P x by-name "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[$NAME_Y]}]}")]"
case_ "x/a from namespaces In (y) by name (matchExpressions)" "[$(P x in-y "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[{\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\",\"operator\":\"In\",\"values\":[\"y\"]}]}}]}]}")]"
case_ "x/a from all namespaces (empty namespaceSelector)" "[$(P x from-all-ns "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[{\"namespaceSelector\":{}}]}]}")]"
case_ "x from namespaces NotIn (y)" "[$(P x notin '{"podSelector":{},"ingress":[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"ns","operator":"NotIn","values":["y"]}]}}]}]}')]"
case_ "x/a from pods c in namespaces y or z (one peer: AND)" "[$(P x a-and '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"ns","operator":"In","values":["y","z"]}]},"podSelector":{"matchLabels":{"pod":"c"}}}]}]}')]"
case_ "x/a from pods In (b,c) of namespaces NotIn (x)" "[$(P x multi "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[{\"namespaceSelector\":{\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\",\"operator\":\"NotIn\",\"values\":[\"x\"]}]},\"podSelector\":{\"matchExpressions\":[{\"key\":\"pod\",\"operator\":\"In\",\"values\":[\"b\",\"c\"]}]}}]}]}")]"
case_ "x/a from namespaces y,z or pods c of x (two peers: OR)" "[$(P x a-or '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"ns","operator":"In","values":["y","z"]}]}},{"podSelector":{"matchLabels":{"pod":"c"}}}]}]}')]"
ipb=$(ip_of y/b)
case_ "x from 10.244.0.0/16 except y/b" "[$(P x block "{\"podSelector\":{},\"ingress\":[{\"from\":[{\"ipBlock\":{\"cidr\":\"10.244.0.0/16\",\"except\":[\"$ipb/32\"]}}]}]}")]"

# ---- policies combining, updated, removed
case_ "policies combine: ingress from y + egress of y only to x/a" "[$(P x from-y '{"podSelector":{},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"ns":"y"}}}]}]}'),$(P y to-xa '{"podSelector":{},"policyTypes":["Egress"],"egress":[{"to":[{"namespaceSelector":{"matchLabels":{"ns":"x"}},"podSelector":{"matchLabels":{"pod":"a"}}}]}]}')]"
case_ "policy update: x/a from y becomes from z" "[$(P x from-y '{"podSelector":{},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"ns":"z"}}}]}]}')]"
case_ "policy removed: everything again" '[]'

# ---- label changes bring pods and namespaces into (and out of) policies
ZA="[$(P x a-from-za '{"podSelector":{"matchLabels":{"pod":"a"}},"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"ns":"z"}},"podSelector":{"matchLabels":{"pod":"a"}}}]}]}')]"
case_ "x/a from pods a of z" "$ZA"
pod_label z/b pod a
case_ "after z/b is relabelled pod=a" "$ZA"
pod_label z/b pod b
ns_label y ns z
case_ "after namespace y is relabelled ns=z" "$ZA"
ns_label y ns y
NS2="[$(P x a-from-ns2 "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[{\"namespaceSelector\":{\"matchLabels\":{\"ns2\":\"updated\"}}}]}]}")]"
case_ "x/a from namespaces labelled ns2=updated (none yet)" "$NS2"
ns_label y ns2 updated
case_ "after namespace y gets ns2=updated" "$NS2"
ns_label y ns2 -
POD2="[$(P x a-from-pod2 "{\"podSelector\":$SEL_A,\"ingress\":[{\"from\":[{\"podSelector\":{\"matchLabels\":{\"pod\":\"b\",\"pod2\":\"updated\"}}}]}]}")]"
case_ "x/a from pods pod=b,pod2=updated (none yet)" "$POD2"
pod_label x/b pod2 updated
case_ "after x/b gets pod2=updated" "$POD2"
pod_label x/b pod2 -
ISO="[$(P x isolate '{"podSelector":{"matchLabels":{"target":"isolated"}},"policyTypes":["Ingress"]}')]"
case_ "x deny ingress to pods target=isolated (none yet)" "$ISO"
pod_label x/a target isolated
case_ "after x/a gets target=isolated" "$ISO"
pod_label x/a target -
case_ "cleanup: labels restored, no policy" '[]'

tt_finish
