#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A fake kube-apiserver for weft's tests: the kinds weft caches, on the real wire format, enough for
weft's list/watch clients and for kubectl (checked by test/interop/test-kube-fixture-kubectl.sh).
Python 3 stdlib; YAML bodies (server-side apply, /fixture/apply) use python3-yaml when it is there.

  fake-apiserver.py [--bind 127.0.0.1] [--port 0] [--port-file F] [--token T]
                    [--cert crt.pem --key key.pem] [--node NAME=CIDR[,CIDR6]]... [--objects FILE]...

Kinds (resource, short names):
  v1                    nodes (no), namespaces (ns), pods (po), services (svc)
  networking.k8s.io/v1  networkpolicies (netpol)
  discovery.k8s.io/v1   endpointslices
  coordination.k8s.io/v1  leases (leader election: get/create/update like any object, 409 on a
                        stale resourceVersion; the Table shows the holder as kube-apiserver does)
Paths: /api/v1/RES[/NAME[/status]] for cluster-scoped kinds; /api/v1/namespaces/NS/RES[/NAME[/status]]
and /api/v1/RES (all namespaces) for namespaced ones; /apis/GROUP/v1/... the same; the old
/api/v1/watch/... prefix too. Pods, Nodes, Namespaces and Services have a status subresource: writes to
the object leave .status alone, writes to /status change only .status.

API (bearer token required when --token is given: 401 + Status otherwise; /version is public):
  GET    /version, /api, /apis, /apis/GROUP, /api/v1, /apis/GROUP/VERSION   (legacy discovery:
         APIVersions, APIGroupList, APIGroup, APIResourceList with verbs, namespaced, kind,
         shortNames; the aggregated-discovery Accept types are answered with the legacy documents,
         which clients take as "not supported" and fall back from, as from a 1.25 server)
  GET    list: KindList {kind, apiVersion, metadata.resourceVersion[, continue, remainingItemCount],
         items without kind/apiVersion}; labelSelector (=, ==, !=, in, notin, exists, !exists),
         fieldSelector (=, ==, != on metadata.name, metadata.namespace and the kind's fields:
         pods spec.nodeName, spec.hostNetwork, status.phase, status.podIP, ...; nodes
         spec.unschedulable; services spec.type, spec.clusterIP; an unsupported field is 400);
         limit + continue (a continue token older than the last compaction is 410 Expired).
         Accept ...;as=Table;g=meta.k8s.io gets a meta.k8s.io/v1 Table (what `kubectl get` prints).
  GET    watch (?watch=1|true): chunked {"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object"}
         lines, filtered by namespace and selectors (an object that stops or starts matching is a
         DELETED or ADDED, as the real server sends); resourceVersion "" or "0" starts with a
         synthetic ADDED per object; sendInitialEvents=true does too, then (allowWatchBookmarks) a
         BOOKMARK annotated k8s.io/initial-events-end; a resourceVersion older than the last
         compaction gets ERROR with a Status code 410 (Expired), then the stream ends;
         timeoutSeconds ends the stream normally.
  GET    one object (with kind/apiVersion)
  POST   create: uid, creationTimestamp, resourceVersion, generation (NetworkPolicy, EndpointSlice),
         generateName, the kind's defaults (Service clusterIP/nodePort allocation, Namespace
         kubernetes.io/metadata.name label and phase, Pod phase Pending, ...); 409 AlreadyExists; a
         namespaced object in a Namespace that does not exist is 404.
  PUT    replace: metadata.resourceVersion required (422), stale is 409 Conflict
  PATCH  application/merge-patch+json (RFC 7386), application/json-patch+json (RFC 6902),
         application/strategic-merge-patch+json (maps merge; the lists kubectl patches merge by
         their patchMergeKey: containers/volumes/env by name, container ports by containerPort,
         Service ports by port, conditions by type, podIPs by ip; $patch, $setElementOrder,
         $retainKeys and $deleteFromPrimitiveList directives), application/apply-patch+yaml
         (server-side apply: creates a missing object; merges like a strategic merge patch; no
         field ownership, so a field dropped from the applied config is not removed);
         a resourceVersion in the patch is a precondition (409)
  DELETE the object (Pods, Nodes, Namespaces, Services) or a Status Success (the others), deleted at
         once (no graceful deletion, no finalizers), except a Namespace: it turns Terminating (MODIFIED;
         creating objects in it is 403 Forbidden), and --namespace-deletion-delay (1 s) later its
         objects and then itself are DELETED;
         DeleteOptions preconditions; DELETE on a list path deletes the matching objects.
  dryRun=All on any write: the answer without the change.
Test control (no auth):
  POST   /fixture/nodes          body: a Node (or {"name", "podCIDRs", "annotations", "labels"});
                                 created (ADDED) or merged into the existing one (MODIFIED)
  POST   /fixture/apply          body: a JSON object or List, or YAML (one or more documents) of
                                 any kinds above: each created or merged in, status included (as if
                                 the kubelet/controllers had written it). {"applied": [...]}
  GET    /fixture/objects        every object: {"RESOURCE": [object with kind/apiVersion, ...]}
  POST   /fixture/advance        the resourceVersion moves on with no event (as writes to other
                                 resources move etcd's global revision); body {"by": N}: N steps
  POST   /fixture/compact        advance (unless body {"advance": false}), then every resourceVersion
                                 up to now is gone: watches from an older one get 410
  POST   /fixture/end-watches    every open watch ends normally (final chunk), as at timeoutSeconds
  POST   /fixture/drop-watches   every open watch connection is cut without the final chunk
  POST   /fixture/bookmark       every watch with allowWatchBookmarks gets a BOOKMARK now
  POST   /fixture/token          body {"token": "..."}: the accepted token from now on
  POST   /fixture/delay          body {"rules": [{"seconds": S, "path": REGEX, "method"?, "client"?}]}:
                                 a GET or PUT whose path (query included) matches, with that method and
                                 from that client address if given, waits S seconds before it is
                                 processed (a slow writer caught mid-way, a slow read); the rules
                                 replace the previous ones ({"rules": []} ends them)
  GET    /fixture/stats          {"watches": open watches, "lists", "watches_started", "patches",
                                 "resourceVersion"}

One resourceVersion counter for every kind (etcd's revision). Changes that leave an object as it was
do not bump its resourceVersion and send no event (as the real server does). The namespaces default,
kube-system, kube-public and kube-node-lease exist from the start (resourceVersions below 100, no
events). Not here: field ownership (managedFields), graceful deletion and finalizers, OpenAPI
(/openapi/v2 and /v3 are 404: kubectl then validates nothing client-side and asks the server with
fieldValidation, which is accepted and ignored), admission, validation beyond names and kinds.
"""
import argparse
import base64
import copy
import datetime
import http.server
import json
import os
import random
import re
import select
import socket
import socketserver
import ssl
import string
import sys
import threading
import time
import urllib.parse
import uuid


class Kind:
    def __init__(self, group, resource, kind, namespaced, short, status, fields, generation=False,
                 returns_object=True, columns=()):
        self.group, self.version, self.resource, self.kind = group, "v1", resource, kind
        self.namespaced, self.short, self.status, self.generation = namespaced, short, status, generation
        self.fields = ["metadata.name"] + (["metadata.namespace"] if namespaced else []) + fields
        self.returns_object = returns_object
        self.columns = columns   # (name, type, description, function of the object)
        self.api_version = group + "/v1" if group else "v1"
        self.singular = kind.lower()


def _get(o, path, default=None):
    for k in path.split("."):
        if not isinstance(o, dict) or k not in o:
            return default
        o = o[k]
    return o


def _external_ip(o):
    """kube-apiserver's printer (pkg/printers/internalversion getServiceExternalIP): ClusterIP and
    NodePort show spec.externalIPs or <none>; LoadBalancer the ingress IPs (else hostnames), sorted
    and unique, cut to 16 characters with "...", then externalIPs, or <pending> if neither;
    ExternalName its name."""
    t = _get(o, "spec.type", "ClusterIP")
    ext = _get(o, "spec.externalIPs", []) or []
    if t == "ExternalName":
        return _get(o, "spec.externalName", "")
    if t in ("ClusterIP", "NodePort"):
        return ",".join(ext) or "<none>"
    if t != "LoadBalancer":
        return "<unknown>"
    lb = ",".join(sorted({i.get("ip") or i.get("hostname", "") for i in
                          _get(o, "status.loadBalancer.ingress", []) or [] if i.get("ip") or i.get("hostname")}))
    if len(lb) > 16:
        lb = lb[:13] + "..."
    return ",".join(([lb] if lb else []) + ext) or "<pending>"


def _ports(o):
    return ",".join("%s%s/%s" % (p.get("port"), ":%s" % p["nodePort"] if p.get("nodePort") else "",
                                 p.get("protocol", "TCP")) for p in _get(o, "spec.ports", []) or []) or "<none>"


KINDS = [
    Kind("", "nodes", "Node", False, ["no"], True, ["spec.unschedulable"], columns=[
        ("Status", "string", "node readiness", lambda o: next(
            ("Ready" if c.get("status") == "True" else "NotReady"
             for c in _get(o, "status.conditions", []) or [] if c.get("type") == "Ready"), "Unknown")),
        ("Pod CIDRs", "string", "spec.podCIDRs", lambda o: ",".join(_get(o, "spec.podCIDRs", []) or []))]),
    Kind("", "namespaces", "Namespace", False, ["ns"], True, ["status.phase"], columns=[
        ("Status", "string", "status.phase", lambda o: _get(o, "status.phase", ""))]),
    Kind("", "pods", "Pod", True, ["po"], True,
         ["spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
          "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName"], columns=[
        ("Status", "string", "status.phase", lambda o: _get(o, "status.phase", "")),
        ("IP", "string", "status.podIP", lambda o: _get(o, "status.podIP", "<none>")),
        ("Node", "string", "spec.nodeName", lambda o: _get(o, "spec.nodeName", "<none>"))]),
    Kind("", "services", "Service", True, ["svc"], True, ["spec.clusterIP", "spec.type"], columns=[
        ("Type", "string", "spec.type", lambda o: _get(o, "spec.type", "")),
        ("Cluster-IP", "string", "spec.clusterIP", lambda o: _get(o, "spec.clusterIP", "<none>")),
        ("External-IP", "string", "external addresses", _external_ip),
        ("Port(s)", "string", "spec.ports", _ports)]),
    Kind("networking.k8s.io", "networkpolicies", "NetworkPolicy", True, ["netpol"], False, [],
         generation=True, returns_object=False, columns=[
             ("Pod-Selector", "string", "spec.podSelector", lambda o: ",".join(
                 "%s=%s" % kv for kv in sorted((_get(o, "spec.podSelector.matchLabels", {}) or {}).items()))
              or "<none>")]),
    Kind("discovery.k8s.io", "endpointslices", "EndpointSlice", True, [], False, [],
         generation=True, returns_object=False, columns=[
             ("AddressType", "string", "addressType", lambda o: o.get("addressType", "")),
             ("Ports", "string", "ports", lambda o: ",".join(
                 str(p.get("port")) for p in o.get("ports") or []) or "<unset>"),
             ("Endpoints", "string", "addresses", lambda o: ",".join(
                 a for e in o.get("endpoints") or [] for a in e.get("addresses", [])) or "<unset>")]),
    Kind("coordination.k8s.io", "leases", "Lease", True, [], False, [], returns_object=False, columns=[
        ("Holder", "string", "spec.holderIdentity", lambda o: _get(o, "spec.holderIdentity", "") or "")]),
]
BY_GV_RES = {(k.group, k.resource): k for k in KINDS}
BY_KIND = {(k.api_version, k.kind): k for k in KINDS}
GROUPS = sorted({k.group for k in KINDS if k.group})

STATE = threading.Condition()
STORE = {k.resource: {} for k in KINDS}   # resource -> (namespace, name) -> object (no kind/apiVersion)
EVENTS = []         # (rv, Kind, type, object with kind/apiVersion, previous object or None), after the last compaction
RV = [100]          # the store's resourceVersion counter
COMPACTED = [0]     # watches from a resourceVersion below this get 410
DROP_GEN = [0]      # bumped by /fixture/drop-watches
END_GEN = [0]       # bumped by /fixture/end-watches
BOOKMARK_GEN = [0]
TOKEN = [None]
DELAYS = []         # /fixture/delay rules: (path regex, method or None, client address or None, seconds)
STATS = {"watches": 0, "lists": 0, "watches_started": 0, "patches": 0}
NEXT_IP = [10]      # Service clusterIPs from 10.96.0.0/16
NEXT_NODEPORT = [30000]
NS_DELETE_DELAY = [1.0]  # seconds from a Namespace's DELETE (Terminating) to its objects' and its own DELETED


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.code, self.status = code, status(code, reason, message, details)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status(code, reason, message, details=None):
    s = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
         "message": message, "reason": reason, "code": code}
    if details:
        s["details"] = details
    return s


def not_found(kind, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (qualified(kind), name),
                    {"name": name, "group": kind.group, "kind": kind.resource} if kind.group else
                    {"name": name, "kind": kind.resource})


def qualified(kind):
    return kind.resource + ("." + kind.group if kind.group else "")


def with_kind(kind, obj):
    o = {"kind": kind.kind, "apiVersion": kind.api_version}
    o.update(copy.deepcopy(obj))
    return o


def key_of(obj):
    m = obj.get("metadata", {})
    return (m.get("namespace", ""), m.get("name", ""))


# ---- patches ----

def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = copy.deepcopy(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# patchMergeKey of the lists weft's kinds have, by (kind, path of field names); a list not here is
# replaced whole (atomic), as NetworkPolicy and EndpointSlice lists are.
MERGE_KEYS = {
    ("Pod", "spec.containers"): "name", ("Pod", "spec.initContainers"): "name",
    ("Pod", "spec.ephemeralContainers"): "name", ("Pod", "spec.volumes"): "name",
    ("Pod", "spec.imagePullSecrets"): "name",
    ("Pod", "spec.containers.ports"): "containerPort", ("Pod", "spec.initContainers.ports"): "containerPort",
    ("Pod", "spec.containers.env"): "name", ("Pod", "spec.initContainers.env"): "name",
    ("Pod", "spec.containers.volumeMounts"): "mountPath",
    ("Pod", "status.conditions"): "type", ("Pod", "status.podIPs"): "ip", ("Pod", "status.hostIPs"): "ip",
    ("Node", "status.conditions"): "type",
    ("Namespace", "status.conditions"): "type",
    ("Service", "spec.ports"): "port", ("Service", "status.conditions"): "type",
}


def strategic_merge(target, patch, kind_name="", path=""):
    """Strategic merge patch as kubectl sends it: a merge patch whose lists with a patchMergeKey merge
    element by element, plus the $-directives."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    out = copy.deepcopy(target)
    retain = patch.get("$retainKeys")
    for k, v in patch.items():
        if k.startswith("$setElementOrder/") or k in ("$retainKeys", "$patch"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            if isinstance(out.get(field), list):
                out[field] = [x for x in out[field] if x not in v]
            continue
        sub = path + "." + k if path else k
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list) and (kind_name, sub) in MERGE_KEYS:
            out[k] = merge_list(out.get(k) if isinstance(out.get(k), list) else [], v,
                                MERGE_KEYS[(kind_name, sub)], kind_name, sub)
        elif isinstance(v, dict):
            r = strategic_merge(out.get(k), v, kind_name, sub)
            if r is None:
                out.pop(k, None)
            else:
                out[k] = r
        else:
            out[k] = copy.deepcopy(v)
    if isinstance(retain, list):
        out = {k: v for k, v in out.items() if k in retain}
    return out


def merge_list(old, patch, key, kind_name, path):
    if any(isinstance(e, dict) and e.get("$patch") == "replace" for e in patch):
        return [copy.deepcopy({k: v for k, v in e.items() if k != "$patch"}) for e in patch
                if not (isinstance(e, dict) and e.get("$patch") == "replace" and len(e) == 1)]
    out = copy.deepcopy(old)
    for e in patch:
        if not isinstance(e, dict):
            out.append(copy.deepcopy(e))
            continue
        idx = next((i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == e.get(key)), None)
        if e.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
        elif idx is None:
            out.append(strategic_merge({}, e, kind_name, path))
        else:
            out[idx] = strategic_merge(out[idx], e, kind_name, path)
    return out


def json_pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", "invalid JSON pointer %r" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def json_patch(doc, ops):
    """RFC 6902 JSON patch."""
    doc = copy.deepcopy(doc)
    if not isinstance(ops, list):
        raise ApiError(400, "BadRequest", "a JSON patch is a list of operations")

    def parent(p):
        toks = json_pointer(p)
        if not toks:
            raise ApiError(422, "Invalid", "cannot patch the whole document")
        o = doc
        for t in toks[:-1]:
            o = o[int(t)] if isinstance(o, list) else o[t]
        return o, toks[-1]

    def get(p):
        o = doc
        for t in json_pointer(p):
            o = o[int(t)] if isinstance(o, list) else o[t]
        return o

    try:
        for op in ops:
            kind, p = op.get("op"), op.get("path", "")
            if kind in ("add", "replace"):
                o, last = parent(p)
                if isinstance(o, list):
                    i = len(o) if last == "-" else int(last)
                    if kind == "add":
                        o.insert(i, copy.deepcopy(op["value"]))
                    else:
                        o[i] = copy.deepcopy(op["value"])
                else:
                    if kind == "replace" and last not in o:
                        raise KeyError(last)
                    o[last] = copy.deepcopy(op["value"])
            elif kind == "remove":
                o, last = parent(p)
                del o[int(last) if isinstance(o, list) else last]
            elif kind == "test":
                if get(p) != op.get("value"):
                    raise ApiError(422, "Invalid", "the test operation at %s failed" % p)
            elif kind in ("move", "copy"):
                v = copy.deepcopy(get(op["from"]))
                if kind == "move":
                    o, last = parent(op["from"])
                    del o[int(last) if isinstance(o, list) else last]
                o, last = parent(p)
                if isinstance(o, list):
                    o.insert(len(o) if last == "-" else int(last), v)
                else:
                    o[last] = v
            else:
                raise ApiError(400, "BadRequest", "unknown JSON patch operation %r" % kind)
    except (KeyError, IndexError, ValueError, TypeError) as e:
        raise ApiError(422, "Invalid", "the JSON patch could not be applied: %s" % e)
    return doc


# ---- selectors ----

LABEL_KEY = r"[A-Za-z0-9](?:[-A-Za-z0-9_./]*[A-Za-z0-9])?"
LABEL_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"


def split_top(s):
    """Split a selector at the commas outside parentheses."""
    out, depth, cur = [], 0, ""
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += c
    out.append(cur)
    return [x.strip() for x in out if x.strip()]


def parse_label_selector(s):
    """Returns a list of (key, op, values); op one of = != in notin exists !exists."""
    reqs = []
    for term in split_top(s or ""):
        m = re.fullmatch(r"(%s)\s+(in|notin)\s+\((.*)\)" % LABEL_KEY, term)
        if m:
            vals = [v.strip() for v in m.group(3).split(",")]
            if not all(re.fullmatch(LABEL_VALUE, v) for v in vals):
                raise ApiError(400, "BadRequest", "unable to parse requirement: invalid label value in %r" % term)
            reqs.append((m.group(1), m.group(2), set(vals)))
            continue
        m = re.fullmatch(r"(%s)\s*(==|=|!=)\s*(%s)" % (LABEL_KEY, LABEL_VALUE), term)
        if m:
            reqs.append((m.group(1), "!=" if m.group(2) == "!=" else "=", {m.group(3)}))
            continue
        m = re.fullmatch(r"(!?)\s*(%s)" % LABEL_KEY, term)
        if m:
            reqs.append((m.group(2), "!exists" if m.group(1) else "exists", set()))
            continue
        raise ApiError(400, "BadRequest", "unable to parse requirement: %r is not a valid label selector" % term)
    return reqs


def label_match(reqs, labels):
    labels = labels or {}
    for key, op, vals in reqs:
        has, v = key in labels, labels.get(key)
        if op == "=" and not (has and v in vals):
            return False
        if op == "!=" and has and v in vals:
            return False
        if op == "in" and not (has and v in vals):
            return False
        if op == "notin" and has and v in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!exists" and has:
            return False
    return True


def parse_field_selector(kind, s):
    reqs = []
    for term in [t.strip() for t in (s or "").split(",") if t.strip()]:
        m = re.fullmatch(r"([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*)", term)
        if not m:
            raise ApiError(400, "BadRequest", "invalid selector: '%s'; can't understand '%s'" % (s, term))
        if m.group(1) not in kind.fields:
            raise ApiError(400, "BadRequest", 'field label not supported: %s' % m.group(1))
        reqs.append((m.group(1), m.group(2) != "!=", m.group(3)))
    return reqs


def field_value(obj, path):
    v = _get(obj, path)
    if isinstance(v, bool):
        return "true" if v else "false"
    return "" if v is None else str(v)


def field_match(reqs, obj):
    return all((field_value(obj, f) == v) == eq for f, eq, v in reqs)


class Query:
    """What a list or watch asks for: namespace (None = all) and selectors."""

    def __init__(self, kind, ns, q):
        self.kind, self.ns = kind, ns
        self.labels = parse_label_selector(q.get("labelSelector"))
        self.fields = parse_field_selector(kind, q.get("fieldSelector"))

    def match(self, obj):
        if obj is None:
            return False
        if self.ns is not None and obj.get("metadata", {}).get("namespace") != self.ns:
            return False
        return label_match(self.labels, obj.get("metadata", {}).get("labels")) and field_match(self.fields, obj)


# ---- the store ----

def record(kind, typ, obj, old=None):
    """Caller holds STATE. Bumps the resourceVersion, stores it in obj, logs the event."""
    RV[0] += 1
    obj["metadata"]["resourceVersion"] = str(RV[0])
    EVENTS.append((RV[0], kind, typ, with_kind(kind, obj), old and with_kind(kind, old)))
    STATE.notify_all()


def alloc_ip():
    NEXT_IP[0] += 1
    return "10.96.%d.%d" % (NEXT_IP[0] // 254, NEXT_IP[0] % 254 + 1)


def defaults(kind, obj, old=None):
    """The fields the real API server fills in (defaulting, allocation). old: the stored object on
    updates, whose allocations are kept."""
    meta = obj["metadata"]
    spec = obj.setdefault("spec", {}) if kind.kind in ("Node", "Namespace", "Pod", "Service", "NetworkPolicy") else None
    if kind.kind == "Node":
        if old is None:
            meta.setdefault("labels", {"kubernetes.io/hostname": meta["name"]})
        obj.setdefault("status", {"conditions": [], "addresses": []})
    elif kind.kind == "Namespace":
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta["name"]
        spec.setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
    elif kind.kind == "Pod":
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("dnsPolicy", "ClusterFirst")
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("enableServiceLinks", True)
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("imagePullPolicy", "Always" if c.get("image", "").endswith(":latest") or
                         ":" not in c.get("image", "") else "IfNotPresent")
            for p in c.get("ports", []):
                p.setdefault("protocol", "TCP")
        st = obj.setdefault("status", {})
        st.setdefault("phase", "Pending")
        st.setdefault("qosClass", "BestEffort")
        # podIP is podIPs[0] (the API server keeps them in step)
        if st.get("podIPs"):
            st["podIP"] = st["podIPs"][0].get("ip")
        elif st.get("podIP"):
            st["podIPs"] = [{"ip": st["podIP"]}]
    elif kind.kind == "Service":
        typ = spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for p in spec.get("ports", []):
            p.setdefault("protocol", "TCP")
            if typ != "ExternalName":
                p.setdefault("targetPort", p.get("port"))
        if typ == "ExternalName":
            for k in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                spec.pop(k, None)
        else:
            ip = spec.get("clusterIP") or (old or {}).get("spec", {}).get("clusterIP") or alloc_ip()
            spec["clusterIP"] = ip
            spec.setdefault("clusterIPs", [ip])
            spec.setdefault("ipFamilies", ["IPv4"] if ip == "None" or ":" not in ip else ["IPv6"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            spec.setdefault("internalTrafficPolicy", "Cluster")
        if typ in ("NodePort", "LoadBalancer"):
            oldports = {p.get("port"): p.get("nodePort") for p in (old or {}).get("spec", {}).get("ports", [])}
            used = {q.get("nodePort") for o in STORE["services"].values() for q in o["spec"].get("ports", [])}
            for p in spec.get("ports", []):
                if not p.get("nodePort"):
                    if oldports.get(p.get("port")):
                        p["nodePort"] = oldports[p.get("port")]
                    else:
                        while NEXT_NODEPORT[0] in used:
                            NEXT_NODEPORT[0] += 1
                        p["nodePort"] = NEXT_NODEPORT[0]
                        used.add(p["nodePort"])
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if typ == "LoadBalancer":
            spec.setdefault("allocateLoadBalancerNodePorts", True)
        obj.setdefault("status", {}).setdefault("loadBalancer", {})
    elif kind.kind == "NetworkPolicy":
        if not spec.get("policyTypes"):
            spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
        for rule in spec.get("ingress", []) + spec.get("egress", []):
            for p in rule.get("ports", []) or []:
                p.setdefault("protocol", "TCP")
    elif kind.kind == "EndpointSlice":
        for p in obj.get("ports") or []:
            p.setdefault("protocol", "TCP")


NAME_RE = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")


def check_object(kind, ns, obj, name=None):
    """The checks every write does: kind/apiVersion, name, namespace. Returns obj without kind/apiVersion."""
    if not isinstance(obj, dict):
        raise ApiError(400, "BadRequest", "the body is not an object")
    if obj.get("kind", kind.kind) != kind.kind or obj.get("apiVersion", kind.api_version) != kind.api_version:
        raise ApiError(400, "BadRequest", "the API version in the data (%s) does not match the expected API "
                       "version (%s) or kind %s" % (obj.get("apiVersion"), kind.api_version, obj.get("kind")))
    obj = {k: v for k, v in copy.deepcopy(obj).items() if k not in ("kind", "apiVersion")}
    meta = obj.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise ApiError(400, "BadRequest", "metadata is not an object")
    if name is not None and meta.get("name", name) != name:
        raise ApiError(400, "BadRequest", "the name of the object (%s) does not match the name on the URL (%s)"
                       % (meta.get("name"), name))
    if name is not None:
        meta["name"] = name
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = meta["generateName"] + "".join(random.choice(string.ascii_lowercase + string.digits)
                                                      for _ in range(5))
    n = meta.get("name")
    if not n:
        raise ApiError(422, "Invalid", "%s \"\" is invalid: metadata.name: Required value: name or "
                       "generateName is required" % kind.kind)
    if len(n) > 253 or not NAME_RE.fullmatch(n):
        raise ApiError(422, "Invalid", '%s "%s" is invalid: metadata.name: Invalid value: "%s": a lowercase '
                       "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"
                       % (kind.kind, n, n), {"name": n, "kind": kind.kind})
    if kind.namespaced:
        if meta.get("namespace", ns) != ns:
            raise ApiError(400, "BadRequest", "the namespace of the provided object does not match the namespace "
                           "sent on the request")
        meta["namespace"] = ns
    else:
        meta.pop("namespace", None)
    for k in ("labels", "annotations"):
        if k in meta and not isinstance(meta[k], dict):
            raise ApiError(400, "BadRequest", "metadata.%s is not a map" % k)
        for lk, lv in (meta.get(k) or {}).items():
            if not isinstance(lv, str):
                raise ApiError(400, "BadRequest", "metadata.%s[%s] is not a string" % (k, lk))
    return obj


def ns_exists(kind, ns):
    if kind.namespaced and ("", ns) not in STORE["namespaces"]:
        raise ApiError(404, "NotFound", 'namespaces "%s" not found' % ns, {"name": ns, "kind": "namespaces"})
    if kind.namespaced and STORE["namespaces"][("", ns)]["metadata"].get("deletionTimestamp"):
        raise ApiError(403, "Forbidden", "%s is forbidden: unable to create new content in namespace %s because "
                       "it is being terminated" % (qualified(kind), ns), {"kind": kind.resource})


def create(kind, ns, body, dry=False, fixture=False):
    """Caller holds STATE. Returns the stored object. fixture: a test's write, not a client's: status,
    uid and creationTimestamp are kept as given (as if the kubelet or an older server wrote them)."""
    obj = check_object(kind, ns, body)
    ns_exists(kind, ns)
    key = key_of(obj)
    if key in STORE[kind.resource]:
        raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (qualified(kind), key[1]),
                       {"name": key[1], "group": kind.group, "kind": kind.resource})
    meta = obj["metadata"]
    for k in ("resourceVersion", "deletionTimestamp", "managedFields"):
        meta.pop(k, None)
    if not (fixture and meta.get("uid")):
        meta["uid"] = str(uuid.uuid4())
    if not (fixture and meta.get("creationTimestamp")):
        meta["creationTimestamp"] = now()
    if kind.generation:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    if kind.status and kind.kind != "Node" and not fixture:
        # Status is the kubelet's and the controllers' to write (the status subresource); Nodes allow
        # every field on create.
        obj.pop("status", None)
    defaults(kind, obj)
    if dry:
        meta["resourceVersion"] = str(RV[0])
        return obj
    STORE[kind.resource][key] = obj
    record(kind, "ADDED", obj)
    return obj


def spec_of(obj):
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def store_update(kind, old, new, dry=False, fixture=False):
    """Caller holds STATE. new replaces old (same key); server-owned metadata kept (a fixture write
    may set uid and creationTimestamp); no-op writes are not events."""
    meta, ometa = new["metadata"], old["metadata"]
    for k in ("uid", "creationTimestamp", "generation"):
        if fixture and k in meta and k != "generation":
            continue
        if k in ometa:
            meta[k] = ometa[k]
        else:
            meta.pop(k, None)
    meta.pop("managedFields", None)
    meta["resourceVersion"] = ometa["resourceVersion"]
    defaults(kind, new, old)
    if kind.generation and spec_of(new) != spec_of(old):
        meta["generation"] = ometa.get("generation", 1) + 1
    if new == old or dry:
        return new if dry else old
    STORE[kind.resource][key_of(old)] = new
    record(kind, "MODIFIED", new, old)
    return new


def lookup(kind, ns, name):
    obj = STORE[kind.resource].get((ns or "", name))
    if obj is None:
        raise not_found(kind, name)
    return obj


def conflict(kind, name):
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                    "please apply your changes to the latest version and try again" % (qualified(kind), name),
                    {"name": name, "group": kind.group, "kind": kind.resource})


def update(kind, ns, name, sub, body, dry=False):
    old = lookup(kind, ns, name)
    obj = check_object(kind, ns, body, name)
    rv = obj["metadata"].get("resourceVersion")
    if not rv:
        raise ApiError(422, "Invalid", '%s "%s" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
                       "must be specified for an update" % (kind.kind, name))
    if rv != old["metadata"]["resourceVersion"]:
        raise conflict(kind, name)
    if sub == "status":
        new = copy.deepcopy(old)
        new["status"] = obj.get("status", {})
    else:
        new = obj
        if kind.status:
            new["status"] = copy.deepcopy(old.get("status", {}))
    return store_update(kind, old, new, dry)


def patch(kind, ns, name, sub, ctype, raw, q, dry=False):
    """Returns (code, object)."""
    if ctype == "application/apply-patch+yaml":
        if not q.get("fieldManager"):
            raise ApiError(400, "BadRequest", "PATCH, application/apply-patch+yaml requires fieldManager to be set")
        docs = load_docs(raw)
        if len(docs) != 1:
            raise ApiError(400, "BadRequest", "an apply patch is one object")
        body = docs[0]
        old = STORE[kind.resource].get((ns or "", name))
        if old is None:
            if sub:
                raise not_found(kind, name)
            return 201, create(kind, ns, dict(body, metadata=dict(body.get("metadata") or {}, name=name)), dry)
        p = check_object(kind, ns, body, name)
    else:
        try:
            p = json.loads(raw) if raw.strip() else {}
        except ValueError as e:
            raise ApiError(400, "BadRequest", "invalid JSON: %s" % e)
    old = lookup(kind, ns, name)
    STATS["patches"] += 1
    base = with_kind(kind, old)
    if ctype == "application/json-patch+json":
        new = json_patch(base, p)
    elif ctype == "application/merge-patch+json":
        new = merge_patch(base, p)
    else:
        new = strategic_merge(base, p, kind.kind)
    if not isinstance(new, dict):
        raise ApiError(422, "Invalid", "the patch does not leave an object")
    want_rv = (p.get("metadata") or {}).get("resourceVersion") if isinstance(p, dict) else None
    if want_rv and want_rv != old["metadata"]["resourceVersion"]:
        raise conflict(kind, name)
    new = check_object(kind, ns, new, name)
    if sub == "status":
        out = copy.deepcopy(old)
        out["status"] = new.get("status", {})
        new = out
    elif kind.status:
        new["status"] = copy.deepcopy(old.get("status", {}))
    return 200, store_update(kind, old, new, dry)


def delete(kind, ns, name, opts, dry=False):
    old = lookup(kind, ns, name)
    pre = (opts or {}).get("preconditions") or {}
    if (pre.get("uid") and pre["uid"] != old["metadata"]["uid"]) or \
            (pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]):
        raise ApiError(409, "Conflict", "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                       % (pre.get("uid"), old["metadata"]["uid"]))
    if dry:
        return old
    if kind.kind == "Namespace":
        # As the namespace controller does it: Terminating first (a MODIFIED), its objects deleted,
        # then the Namespace itself, NS_DELETE_DELAY later.
        if old["metadata"].get("deletionTimestamp"):
            return old
        new = copy.deepcopy(old)
        new["metadata"]["deletionTimestamp"] = now()
        new["status"]["phase"] = "Terminating"
        STORE["namespaces"][key_of(old)] = new
        record(kind, "MODIFIED", new, old)
        t = threading.Timer(NS_DELETE_DELAY[0], finish_namespace, (name, old["metadata"]["uid"]))
        t.daemon = True
        t.start()
        return new
    del STORE[kind.resource][key_of(old)]
    record(kind, "DELETED", old)
    return old


def finish_namespace(name, uid):
    with STATE:
        ns = STORE["namespaces"].get(("", name))
        if ns is None or ns["metadata"]["uid"] != uid:
            return
        for k in KINDS:
            if k.namespaced:
                for key in sorted(x for x in STORE[k.resource] if x[0] == name):
                    record(k, "DELETED", STORE[k.resource].pop(key))
        del STORE["namespaces"][("", name)]
        record(BY_GV_RES[("", "namespaces")], "DELETED", ns)


def load_docs(raw):
    """JSON, or YAML (one or more documents); Lists are flattened."""
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        docs = [json.loads(text)] if text.strip() else []
    except ValueError:
        try:
            import yaml
        except ImportError:
            raise ApiError(415, "UnsupportedMediaType", "YAML needs python3-yaml")
        try:
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as e:
            raise ApiError(400, "BadRequest", "invalid YAML: %s" % e)
    out = []
    for d in docs:
        if isinstance(d, dict) and d.get("kind", "").endswith("List") and isinstance(d.get("items"), list):
            out.extend(d["items"])
        else:
            out.append(d)
    return out


def fixture_apply(obj):
    """Caller holds STATE. Create or merge one object of any kind, status included."""
    if not isinstance(obj, dict):
        raise ApiError(400, "BadRequest", "not an object")
    kind = BY_KIND.get((obj.get("apiVersion"), obj.get("kind")))
    if kind is None:
        raise ApiError(400, "BadRequest", "no kind %s in %s here" % (obj.get("kind"), obj.get("apiVersion")))
    ns = (obj.get("metadata") or {}).get("namespace", "default") if kind.namespaced else None
    name = (obj.get("metadata") or {}).get("name")
    old = STORE[kind.resource].get((ns or "", name))
    if old is None:
        return create(kind, ns, obj, fixture=True)
    new = check_object(kind, ns, merge_patch(with_kind(kind, old), {k: v for k, v in obj.items()}), name)
    new["metadata"].pop("resourceVersion", None)
    return store_update(kind, old, new, fixture=True)


def normalize_node(body):
    """A Node from /fixture/nodes' body: a Node object or the short form."""
    if "metadata" in body or "spec" in body:
        return copy.deepcopy(body)
    node = {"metadata": {"name": body["name"]}, "spec": {}}
    if body.get("podCIDRs"):
        # podCIDR is the first of podCIDRs (the API server keeps them in step); empty = omitted.
        node["spec"]["podCIDRs"] = body["podCIDRs"]
        node["spec"]["podCIDR"] = body["podCIDRs"][0]
    for k in ("annotations", "labels"):
        if k in body:
            node["metadata"][k] = body[k]
    return node


def upsert_node(body):
    """Caller holds STATE. Returns (status, node)."""
    kind = BY_GV_RES[("", "nodes")]
    node = normalize_node(body)
    name = node.get("metadata", {}).get("name")
    if not name:
        return 422, status(422, "Invalid", "metadata.name: Required value")
    for k in ("kind", "apiVersion"):
        node.pop(k, None)
    old = STORE["nodes"].get(("", name))
    if old is None:
        try:
            return 201, create(kind, None, node, fixture=True)
        except ApiError as e:
            return e.code, e.status
    node.get("metadata", {}).pop("resourceVersion", None)
    return 200, store_update(kind, old, merge_patch(old, node), fixture=True)


# ---- HTTP ----

class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    ssl_ctx = None

    def get_request(self):
        sock, addr = self.socket.accept()
        if self.ssl_ctx:
            # Handshake in the handler's thread (first read), not in the accept loop.
            sock = self.ssl_ctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr


def resource_list(group, version):
    res = []
    for k in KINDS:
        if k.group != group or k.version != version:
            continue
        r = {"name": k.resource, "singularName": k.singular, "namespaced": k.namespaced, "kind": k.kind,
             "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]}
        if k.short:
            r["shortNames"] = k.short
        if k.kind in ("Pod", "Service"):
            r["categories"] = ["all"]
        res.append(r)
        if k.status:
            res.append({"name": k.resource + "/status", "singularName": "", "namespaced": k.namespaced,
                        "kind": k.kind, "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": group + "/" + version if group else version, "resources": res}


def api_group(g):
    gv = {"groupVersion": g + "/v1", "version": "v1"}
    return {"name": g, "versions": [gv], "preferredVersion": gv}


def openapi_v3(parts):
    """/openapi/v3 (the index) and /openapi/v3/api/v1, /openapi/v3/apis/GROUP/v1: no schemas, only each
    kind's PATCH operations with their fieldValidation parameter. That is what kubectl's
    --validate=strict (the default) looks for before it leaves validation to the server; without it
    kubectl wants /openapi/v2 schemas to validate on its own and refuses to apply."""
    gvs = [("api/v1", "")] + [("apis/%s/v1" % g, g) for g in GROUPS]
    if parts == ["openapi", "v3"]:
        return {"paths": {p: {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (p, "0" * 16)} for p, _ in gvs}}
    for p, g in gvs:
        if parts[2:] != p.split("/"):
            continue
        paths = {}
        for k in KINDS:
            if k.group != g:
                continue
            base = "/" + p + ("/namespaces/{namespace}/" if k.namespaced else "/") + k.resource + "/{name}"
            params = [{"name": n, "in": "query", "schema": {"type": "string"}, "uniqueItems": True}
                      for n in ("dryRun", "fieldManager", "fieldValidation", "force")]
            for sub in [""] + (["/status"] if k.status else []):
                paths[base + sub] = {"patch": {
                    "operationId": "patch" + k.kind + sub.replace("/", "_"), "parameters": params,
                    "responses": {"200": {"description": "OK"}},
                    "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": g, "version": "v1", "kind": k.kind}}}
        return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.32.0-fake"}, "paths": paths,
                "components": {"schemas": {}}}
    return None


def table(kind, objs, list_meta):
    cols = [{"name": "Name", "type": "string", "format": "name", "description": "metadata.name", "priority": 0}]
    cols += [{"name": n, "type": t, "format": "", "description": d, "priority": 0} for n, t, d, _ in kind.columns]
    cols.append({"name": "Age", "type": "string", "format": "", "description": "metadata.creationTimestamp",
                 "priority": 0})
    rows = []
    for o in objs:
        age = "<unknown>"
        ts = o.get("metadata", {}).get("creationTimestamp")
        if ts:
            s = int(time.time() - datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=datetime.timezone.utc).timestamp())
            age = "%ds" % s if s < 120 else "%dm" % (s // 60) if s < 7200 else "%dh" % (s // 3600)
        cells = [o["metadata"]["name"]] + [f(o) for _, _, _, f in kind.columns] + [age]
        rows.append({"cells": cells, "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                                "metadata": copy.deepcopy(o["metadata"])}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": cols,
            "rows": rows}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver/1"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("fake-apiserver: " + (fmt % args) + "\n")

    # ---- plumbing ----

    def send_json(self, code, obj, ctype="application/json"):
        data = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def raw_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def body(self):
        raw = self.raw_body()
        return json.loads(raw) if raw.strip() else {}

    def authorized(self):
        if TOKEN[0] is None:
            return True
        if self.headers.get("Authorization") == "Bearer " + TOKEN[0]:
            return True
        self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
        return False

    def route(self):
        u = urllib.parse.urlsplit(self.path)
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
        parts = [urllib.parse.unquote(p) for p in u.path.strip("/").split("/") if p]
        return parts, q

    def not_found(self):
        self.send_json(404, status(404, "NotFound", "the server could not find the requested resource"))

    def resolve(self, parts):
        """An API path -> (Kind, namespace or None, name or None, subresource or None, watch prefix), or None."""
        if parts[:2] == ["api", "v1"]:
            group, rest = "", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis" and parts[2] == "v1":
            group, rest = parts[1], parts[3:]
        else:
            return None
        watch = bool(rest) and rest[0] == "watch"
        if watch:
            rest = rest[1:]
        if not rest:
            return None
        ns = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            k = BY_GV_RES.get((group, rest[2]))
            if k is not None and k.namespaced:
                ns, rest = rest[1], rest[2:]
        kind = BY_GV_RES.get((group, rest[0]))
        if kind is None or len(rest) > 3:
            return None
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if kind.namespaced and ns is None and name is not None:
            return None
        if sub is not None and not (sub == "status" and kind.status):
            return None
        return kind, ns, name, sub, watch

    def api(self, method):
        """The API verbs; False when the path is not an API object path."""
        parts, q = self.route()
        r = self.resolve(parts)
        if r is None:
            return False
        if not self.authorized():
            return True
        kind, ns, name, sub, watch_prefix = r
        dry = q.get("dryRun") == "All"
        try:
            if method == "GET" and name is None:
                if watch_prefix or q.get("watch") in ("1", "true"):
                    return self.watch(kind, ns, q) or True
                return self.list(kind, ns, q) or True
            if watch_prefix:
                raise ApiError(405, "MethodNotAllowed", "watch paths are for GET")
            if method == "GET":
                with STATE:
                    out = with_kind(kind, lookup(kind, ns, name))
                return self.send_json(200, out) or True
            if method == "POST":
                if name is not None:
                    raise ApiError(405, "MethodNotAllowed", "POST is for collections")
                body = self.parse_body()
                with STATE:
                    out = with_kind(kind, create(kind, ns, body, dry))
                return self.send_json(201, out) or True
            if method == "PUT":
                if name is None:
                    raise ApiError(405, "MethodNotAllowed", "PUT is for objects")
                body = self.parse_body()
                with STATE:
                    out = with_kind(kind, update(kind, ns, name, sub, body, dry))
                return self.send_json(200, out) or True
            if method == "PATCH":
                if name is None:
                    raise ApiError(405, "MethodNotAllowed", "PATCH is for objects")
                ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
                if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json",
                                 "application/json-patch+json", "application/apply-patch+yaml"):
                    raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                                   "format - accepted media types include: application/json-patch+json, "
                                   "application/merge-patch+json, application/apply-patch+yaml, "
                                   "application/strategic-merge-patch+json")
                raw = self.raw_body()
                with STATE:
                    code, out = patch(kind, ns, name, sub, ctype, raw, q, dry)
                    out = with_kind(kind, out)
                return self.send_json(code, out) or True
            if method == "DELETE":
                if sub is not None:
                    raise ApiError(405, "MethodNotAllowed", "DELETE is for objects")
                opts = self.parse_body()
                if name is None:
                    query = Query(kind, ns, q)
                    with STATE:
                        gone = [with_kind(kind, delete(kind, k[0], k[1], opts, dry)) for k, o in
                                sorted(STORE[kind.resource].items()) if query.match(o)]
                        rv = str(RV[0])
                    for o in gone:
                        o.pop("kind")
                        o.pop("apiVersion")
                    return self.send_json(200, {"kind": kind.kind + "List", "apiVersion": kind.api_version,
                                                "metadata": {"resourceVersion": rv}, "items": gone}) or True
                with STATE:
                    old = delete(kind, ns, name, opts, dry)
                if kind.returns_object:
                    return self.send_json(200, with_kind(kind, old)) or True
                details = {"name": name, "kind": kind.resource, "uid": old["metadata"]["uid"]}
                if kind.group:
                    details["group"] = kind.group
                return self.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                            "status": "Success", "details": details}) or True
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")
        except ApiError as e:
            self.send_json(e.code, e.status)
            return True

    def parse_body(self):
        raw = self.raw_body()
        if not raw.strip():
            return {}
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ctype in ("application/yaml", "application/apply-patch+yaml"):
            docs = load_docs(raw)
            return docs[0] if docs else {}
        try:
            return json.loads(raw)
        except ValueError as e:
            raise ApiError(400, "BadRequest", "invalid JSON: %s" % e)

    def list(self, kind, ns, q):
        query = Query(kind, ns, q)
        limit = int(q.get("limit") or 0)
        cont = q.get("continue")
        with STATE:
            STATS["lists"] += 1
            rv = RV[0]
            start = None
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont.encode()))
                    rv, start = int(tok["rv"]), tuple(tok["start"])
                except (ValueError, KeyError, TypeError):
                    raise ApiError(400, "BadRequest", "continue key is not valid")
                if rv < COMPACTED[0]:
                    raise ApiError(410, "Expired", "The provided continue parameter is too old to display a "
                                   "consistent list result. You can start a new list without the continue "
                                   "parameter, or use the continue token in this response to retrieve the "
                                   "remainder of the results. Continuing with the provided token results in an "
                                   "inconsistent list - objects that were created, modified, or deleted between "
                                   "the time the first chunk was returned and now may show up in the list.")
            keys = sorted(k for k, o in STORE[kind.resource].items() if (start is None or k > start)
                          and query.match(o))
            meta = {"resourceVersion": str(rv)}
            if limit and len(keys) > limit:
                meta["continue"] = base64.urlsafe_b64encode(json.dumps(
                    {"rv": rv, "start": list(keys[limit - 1])}).encode()).decode()
                meta["remainingItemCount"] = len(keys) - limit
                keys = keys[:limit]
            items = [copy.deepcopy(STORE[kind.resource][k]) for k in keys]
        accept = self.headers.get("Accept") or ""
        if "as=Table" in accept and "g=meta.k8s.io" in accept:
            return self.send_json(200, table(kind, items, meta),
                                  "application/json;as=Table;v=v1;g=meta.k8s.io")
        self.send_json(200, {"kind": kind.kind + "List", "apiVersion": kind.api_version, "metadata": meta,
                             "items": items})

    def discovery(self, parts):
        if parts == ["api"]:
            host = self.connection.getsockname()
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
                {"clientCIDR": "0.0.0.0/0", "serverAddress": "%s:%d" % (host[0], host[1])}]}
        if parts == ["apis"]:
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api_group(g) for g in GROUPS]}
        if parts == ["api", "v1"]:
            return resource_list("", "v1")
        if len(parts) == 2 and parts[0] == "apis" and parts[1] in GROUPS:
            return dict(api_group(parts[1]), kind="APIGroup", apiVersion="v1")
        if len(parts) == 3 and parts[0] == "apis" and parts[1] in GROUPS and parts[2] == "v1":
            return resource_list(parts[1], "v1")
        return None

    # ---- verbs ----

    def do_GET(self):
        self.delay("GET")
        parts, q = self.route()
        if parts == ["fixture", "stats"]:
            with STATE:
                return self.send_json(200, dict(STATS, resourceVersion=str(RV[0])))
        if parts == ["fixture", "objects"]:
            with STATE:
                return self.send_json(200, {k.resource: [with_kind(k, STORE[k.resource][key])
                                                         for key in sorted(STORE[k.resource])] for k in KINDS})
        if parts == ["version"]:
            return self.send_json(200, {"major": "1", "minor": "32", "gitVersion": "v1.32.0-fake",
                                        "gitCommit": "0" * 40, "gitTreeState": "clean",
                                        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0",
                                        "compiler": "gc", "platform": "linux/amd64"})
        if self.api("GET"):
            return
        if not self.authorized():
            return
        d = self.discovery(parts) if parts[:1] != ["openapi"] else openapi_v3(parts)
        if d is not None:
            return self.send_json(200, d)
        self.not_found()

    def do_PATCH(self):
        if not self.api("PATCH"):
            self.authorized() and self.not_found()

    def delay(self, method):
        """The first /fixture/delay rule that matches: wait before the request is processed (outside
        STATE: other requests go on)."""
        for rx, m, client, secs in list(DELAYS):
            if m in (None, method) and client in (None, self.client_address[0]) and rx.search(self.path):
                time.sleep(secs)
                return

    def do_PUT(self):
        self.delay("PUT")
        if not self.api("PUT"):
            self.authorized() and self.not_found()

    def do_DELETE(self):
        if not self.api("DELETE"):
            self.authorized() and self.not_found()

    def do_POST(self):
        parts, _ = self.route()
        if parts[:1] != ["fixture"]:
            if not self.api("POST"):
                self.authorized() and self.not_found()
            return
        if parts == ["fixture", "apply"]:
            try:
                docs = load_docs(self.raw_body())
                with STATE:
                    done = [with_kind(BY_KIND[(d["apiVersion"], d["kind"])], fixture_apply(d)) for d in docs]
            except ApiError as e:
                return self.send_json(e.code, e.status)
            return self.send_json(200, {"applied": done})
        try:
            body = self.body()
        except ValueError as e:
            return self.send_json(400, status(400, "BadRequest", "invalid JSON: %s" % e))
        with STATE:
            if parts == ["fixture", "nodes"]:
                code, obj = upsert_node(body)
                return self.send_json(code, with_kind(BY_GV_RES[("", "nodes")], obj) if code < 300 else obj)
            if parts == ["fixture", "advance"]:
                RV[0] += max(1, int(body.get("by", 1))) if isinstance(body, dict) else 1
                return self.send_json(200, {"resourceVersion": str(RV[0])})
            if parts == ["fixture", "compact"]:
                if body.get("advance", True):
                    RV[0] += 1
                COMPACTED[0] = RV[0]
                del EVENTS[:]
                return self.send_json(200, {"compacted": str(RV[0])})
            if parts == ["fixture", "end-watches"]:
                END_GEN[0] += 1
                STATE.notify_all()
                return self.send_json(200, {"ended": STATS["watches"]})
            if parts == ["fixture", "drop-watches"]:
                DROP_GEN[0] += 1
                STATE.notify_all()
                return self.send_json(200, {"dropped": STATS["watches"]})
            if parts == ["fixture", "bookmark"]:
                BOOKMARK_GEN[0] += 1
                STATE.notify_all()
                return self.send_json(200, {})
            if parts == ["fixture", "token"]:
                TOKEN[0] = body.get("token")
                return self.send_json(200, {})
            if parts == ["fixture", "delay"]:
                DELAYS[:] = [(re.compile(r.get("path", "")), r.get("method"), r.get("client"),
                              float(r.get("seconds", 0))) for r in body.get("rules", [])]
                return self.send_json(200, {})
        self.not_found()

    # ---- watch ----

    def chunk(self, obj, kind=None):
        if kind is not None and obj["type"] in ("ADDED", "MODIFIED", "DELETED"):
            # `kubectl get -w` asks for Tables: each event's object is a one-row Table.
            o = obj["object"]
            obj = {"type": obj["type"], "object": table(kind, [o], {
                "resourceVersion": o["metadata"].get("resourceVersion", "")})}
        data = (json.dumps(obj) + "\n").encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def client_gone(self):
        try:
            r, _, _ = select.select([self.connection], [], [], 0)
            return bool(r) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def watch(self, kind, ns, q):
        query = Query(kind, ns, q)
        rv_s = q.get("resourceVersion", "")
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        initial = q.get("sendInitialEvents") == "true"
        timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
        try:
            rv = int(rv_s) if rv_s else 0
        except ValueError:
            raise ApiError(400, "BadRequest", 'invalid resourceVersion "%s"' % rv_s)
        accept = self.headers.get("Accept") or ""
        as_table = "as=Table" in accept and "g=meta.k8s.io" in accept
        self.send_response(200)
        self.send_header("Content-Type", "application/json;as=Table;v=v1;g=meta.k8s.io" if as_table
                         else "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True

        def bookmark(extra=None):
            meta = {"resourceVersion": str(RV[0])}
            if extra:
                meta["annotations"] = extra
            return {"type": "BOOKMARK", "object": {"kind": kind.kind, "apiVersion": kind.api_version,
                                                   "metadata": meta}}
        with STATE:
            STATS["watches"] += 1
            STATS["watches_started"] += 1
            drop_gen, bm_gen, end_gen = DROP_GEN[0], BOOKMARK_GEN[0], END_GEN[0]
            pending = []
            if rv == 0 or initial:
                # "Any" resourceVersion (or a watch-list): the current state as ADDED events, then changes.
                pending = [{"type": "ADDED", "object": with_kind(kind, o)}
                           for _, o in sorted(STORE[kind.resource].items()) if query.match(o)]
                if initial and bookmarks:
                    pending.append(bookmark({"k8s.io/initial-events-end": "true"}))
                sent = RV[0]
            elif rv < COMPACTED[0]:
                pending = [{"type": "ERROR", "object": status(
                    410, "Expired", "too old resource version: %d (%d)" % (rv, COMPACTED[0]))}]
                sent = None
            else:
                sent = rv
        deadline = None if timeout is None else time.monotonic() + timeout
        dropped = False
        try:
            for ev in pending:
                self.chunk(ev, kind if as_table else None)
            while sent is not None:
                with STATE:
                    STATE.wait(0.2)
                    if DROP_GEN[0] != drop_gen:
                        dropped = True
                        break
                    ended = END_GEN[0] != end_gen
                    out = []
                    for (r, k, t, o, old) in EVENTS:
                        if r <= sent or k is not kind:
                            continue
                        now_in, was_in = query.match(o), query.match(old)
                        if t == "MODIFIED" and now_in != was_in:
                            # Moved into or out of what the watch selects: an add or a delete to it.
                            out.append({"type": "ADDED" if now_in else "DELETED", "object": o})
                        elif now_in:
                            out.append({"type": t, "object": o})
                    sent = max([sent] + [r for (r, _, _, _, _) in EVENTS])
                    if bookmarks and BOOKMARK_GEN[0] != bm_gen:
                        bm_gen = BOOKMARK_GEN[0]
                        out.append(bookmark())
                        sent = max(sent, RV[0])
                for ev in out:
                    self.chunk(ev, kind if as_table else None)
                if ended:
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    break
                if self.client_gone():
                    return
            if dropped:
                # Like a crashed apiserver or a broken connection: no terminating chunk.
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (OSError, ValueError):
            return
        finally:
            with STATE:
                STATS["watches"] -= 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--token")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--node", action="append", default=[], help="NAME=CIDR[,CIDR6]")
    p.add_argument("--objects", action="append", default=[], help="a YAML/JSON file of objects to start with")
    p.add_argument("--namespace-deletion-delay", type=float, default=NS_DELETE_DELAY[0],
                   help="seconds a deleted Namespace stays Terminating")
    p.add_argument("--verbose", action="store_true")
    a = p.parse_args()
    NS_DELETE_DELAY[0] = a.namespace_deletion_delay

    TOKEN[0] = a.token
    with STATE:
        for i, n in enumerate(("default", "kube-node-lease", "kube-public", "kube-system")):
            ns = {"metadata": {"name": n, "uid": str(uuid.uuid4()), "creationTimestamp": now(),
                               "resourceVersion": str(i + 1)}}
            defaults(BY_GV_RES[("", "namespaces")], ns)
            STORE["namespaces"][("", n)] = ns
        for spec in a.node:
            name, _, cidrs = spec.partition("=")
            upsert_node({"name": name, "podCIDRs": [c for c in cidrs.split(",") if c]})
        for f in a.objects:
            with open(f, "rb") as fh:
                for d in load_docs(fh.read()):
                    fixture_apply(d)

    family = socket.AF_INET6 if ":" in a.bind else socket.AF_INET
    Server.address_family = family
    srv = Server((a.bind, a.port), Handler)
    srv.verbose = a.verbose
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
        srv.ssl_ctx = ctx
    port = srv.server_address[1]
    if a.port_file:
        with open(a.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.rename(a.port_file + ".tmp", a.port_file)
    print("fake-apiserver listening on %s:%d (%s)" % (a.bind, port, "https" if a.cert else "http"), flush=True)
    try:
        srv.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
