#!/usr/bin/env bash
# test-policy-truth-table.sh over the vxlan backend: the same cases and model, cross-node pairs through
# the VXLAN device instead of host-gw routes.
POLICY_BACKEND=vxlan
. "$(dirname "$0")/test-policy-truth-table.sh"
