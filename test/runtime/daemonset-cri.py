#!/usr/bin/env python3
"""What the kubelet would send over CRI for one node's pod of a DaemonSet manifest.

    daemonset-cri.py MANIFEST --node-name N --pod-ip IP --configmap-dir DIR --log-dir DIR
                     [--set CONFIGMAP_KEY=VALUE ...] > pod.json

Reads the DaemonSet and the ConfigMaps of a deploy/kubernetes/*.yaml and prints
{"image": ..., "sandbox": PodSandboxConfig, "init": [ContainerConfig...],
 "containers": [ContainerConfig...], "host_dirs": [...]} with CRI v1 field names, translated as
the kubelet does: hostNetwork → NODE network namespace (no CNI call); command/args with $(VAR)
expanded from the container's env; env from values, spec.nodeName / status.podIP / metadata.*
field refs and ConfigMap keys; volumeMounts of hostPath volumes as mounts of the same host path
(DirectoryOrCreate ones listed in host_dirs for the caller to create), of ConfigMap volumes as
files written under --configmap-dir; privileged and added capabilities; memory limit and CPU
request. Anything in the pod spec this script does not know how to translate is an error, so
a manifest change cannot slip past the test that uses it.
"""
import argparse
import json
import os
import re
import sys

import yaml

KNOWN_POD_KEYS = {"serviceAccountName", "hostNetwork", "priorityClassName", "nodeSelector", "tolerations",
                  "terminationGracePeriodSeconds", "initContainers", "containers", "volumes"}
KNOWN_CTR_KEYS = {"name", "image", "imagePullPolicy", "command", "args", "env", "ports", "securityContext",
                  "startupProbe", "readinessProbe", "livenessProbe", "resources", "volumeMounts"}


def die(msg):
    print(f"daemonset-cri: {msg}", file=sys.stderr)
    sys.exit(1)


def quantity(q):
    """Kubernetes quantity → number (bytes for memory, cores for cpu)."""
    m = re.fullmatch(r"([0-9.]+)(m|Ki|Mi|Gi|k|M|G)?", str(q))
    if not m:
        die(f"cannot read quantity {q!r}")
    n, unit = float(m.group(1)), m.group(2) or ""
    return n * {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}[unit]


def expand(s, env):
    """Kubernetes $(VAR) expansion: known variables replaced, $$ escapes, unknown ones kept."""
    def rep(m):
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", rep, s)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest")
    ap.add_argument("--node-name", required=True)
    ap.add_argument("--pod-ip", required=True)
    ap.add_argument("--configmap-dir", required=True)
    ap.add_argument("--log-dir", required=True)
    ap.add_argument("--set", action="append", default=[], help="CONFIGMAP_KEY=VALUE override")
    a = ap.parse_args()

    docs = [d for d in yaml.safe_load_all(open(a.manifest)) if d]
    dss = [d for d in docs if d.get("kind") == "DaemonSet"]
    if len(dss) != 1:
        die(f"expected one DaemonSet in {a.manifest}, found {len(dss)}")
    ds = dss[0]
    cms = {(d["metadata"].get("namespace", "default"), d["metadata"]["name"]): dict(d.get("data", {}))
           for d in docs if d.get("kind") == "ConfigMap"}
    ns = ds["metadata"].get("namespace", "default")
    for kv in a.set:
        k, _, v = kv.partition("=")
        hits = [cm for cm in cms.values() if k in cm]
        if not hits:
            die(f"--set {k}: no ConfigMap has that key")
        for cm in hits:
            cm[k] = v

    spec = ds["spec"]["template"]["spec"]
    unknown = set(spec) - KNOWN_POD_KEYS
    if unknown:
        die(f"pod spec keys this translation does not know: {sorted(unknown)}")
    pod_name = f"{ds['metadata']['name']}-{a.node_name}"
    fields = {"spec.nodeName": a.node_name, "status.podIP": a.pod_ip, "metadata.name": pod_name,
              "metadata.namespace": ns, "status.hostIP": a.pod_ip}

    volumes = {}
    host_dirs = []
    for v in spec.get("volumes", []):
        if "hostPath" in v:
            hp = v["hostPath"]
            if hp.get("type", "") not in ("", "DirectoryOrCreate", "Directory"):
                die(f"volume {v['name']}: hostPath type {hp.get('type')} not handled")
            if hp.get("type") == "DirectoryOrCreate":
                host_dirs.append(hp["path"])
            volumes[v["name"]] = hp["path"]
        elif "configMap" in v:
            key = (ns, v["configMap"]["name"])
            if key not in cms:
                die(f"volume {v['name']}: no ConfigMap {key[1]} in the manifest")
            d = os.path.join(a.configmap_dir, v["name"])
            os.makedirs(d, exist_ok=True)
            for k, val in cms[key].items():
                with open(os.path.join(d, k), "w") as f:
                    f.write(val)
            volumes[v["name"]] = d
        else:
            die(f"volume {v['name']}: kind {sorted(set(v) - {'name'})} not handled")

    host_network = bool(spec.get("hostNetwork"))
    ports = []

    def container(c):
        unknown = set(c) - KNOWN_CTR_KEYS
        if unknown:
            die(f"container {c['name']}: keys this translation does not know: {sorted(unknown)}")
        env = {}
        envs = []
        for e in c.get("env", []):
            if "value" in e:
                val = expand(str(e["value"]), env)
            elif "fieldRef" in e.get("valueFrom", {}):
                fp = e["valueFrom"]["fieldRef"]["fieldPath"]
                if fp not in fields:
                    die(f"env {e['name']}: fieldRef {fp} not handled")
                val = fields[fp]
            elif "configMapKeyRef" in e.get("valueFrom", {}):
                r = e["valueFrom"]["configMapKeyRef"]
                val = cms.get((ns, r["name"]), {}).get(r["key"])
                if val is None:
                    die(f"env {e['name']}: ConfigMap {r['name']} has no key {r['key']}")
            else:
                die(f"env {e['name']}: source not handled")
            env[e["name"]] = val
            envs.append({"key": e["name"], "value": val})
        mounts = []
        for m in c.get("volumeMounts", []):
            if m["name"] not in volumes:
                die(f"container {c['name']}: mount of unknown volume {m['name']}")
            mounts.append({"container_path": m["mountPath"], "host_path": volumes[m["name"]],
                           "readonly": bool(m.get("readOnly", False))})
        for p in c.get("ports", []):
            ports.append({"protocol": p.get("protocol", "TCP"), "container_port": p["containerPort"],
                          "host_port": p.get("hostPort", p["containerPort"] if host_network else 0)})
        sc = c.get("securityContext", {})
        lsc = {"privileged": bool(sc.get("privileged", False)),
               "namespace_options": {"network": "NODE" if host_network else "POD", "pid": "CONTAINER", "ipc": "POD"}}
        if sc.get("capabilities", {}).get("add"):
            lsc["capabilities"] = {"add_capabilities": list(sc["capabilities"]["add"])}
        res = {}
        lim = c.get("resources", {}).get("limits", {})
        req = c.get("resources", {}).get("requests", {})
        if "memory" in lim:
            res["memory_limit_in_bytes"] = int(quantity(lim["memory"]))
        if "cpu" in req:
            res["cpu_shares"] = max(2, int(quantity(req["cpu"]) * 1024))
        return {
            "metadata": {"name": c["name"], "attempt": 0},
            "image": {"image": c["image"]},
            "command": [expand(x, env) for x in c.get("command", [])],
            "args": [expand(x, env) for x in c.get("args", [])],
            "envs": envs,
            "mounts": mounts,
            "log_path": f"{c['name']}/0.log",
            "labels": {"io.kubernetes.container.name": c["name"]},
            "linux": {"resources": res, "security_context": lsc},
        }

    init = [container(c) for c in spec.get("initContainers", [])]
    ctrs = [container(c) for c in spec["containers"]]
    images = {c["image"]["image"] for c in init + ctrs}
    if len(images) != 1:
        die(f"expected one image for all containers, found {sorted(images)}")
    sandbox = {
        "metadata": {"name": pod_name, "namespace": ns, "uid": f"uid-{pod_name}", "attempt": 0},
        "log_directory": a.log_dir,
        "port_mappings": ports,
        "labels": {"app": ds["metadata"]["labels"].get("app", ""), "io.kubernetes.pod.name": pod_name,
                   "io.kubernetes.pod.namespace": ns},
        "linux": {"security_context": {"namespace_options": {"network": "NODE" if host_network else "POD",
                                                             "pid": "CONTAINER", "ipc": "POD"}}},
    }
    json.dump({"image": images.pop(), "sandbox": sandbox, "init": init, "containers": ctrs,
               "host_dirs": host_dirs}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
