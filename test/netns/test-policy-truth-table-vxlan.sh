#!/usr/bin/env bash
# weft-test: timeout 1200
# weft-test: no-san (288-cell tables for 6-7 minutes plain; the sanitizer pass takes the same policy compiler and sync in test-policy-lifecycle, -drops, -ipv6 and unit/test-policy-compile)
# test-policy-truth-table.sh over the vxlan backend: the same cases and model, cross-node pairs through
# the VXLAN device instead of host-gw routes.
POLICY_BACKEND=vxlan
. "$(dirname "$0")/test-policy-truth-table.sh"
