#!/usr/bin/env python3
"""Offline checks of the Kubernetes manifests of a folder (ops/k8s), for k8s_test.sh.

Usage: k8s_manifest_check.py DIR [--stage ROOT KEYDIR]
  Environment: KUBECTL (kubectl 1.20), FARM_COORDINATOR_BIN, FARM_WORKER_BIN,
  FARM_LEARNER_BIN (their --help is the reference for the flags).
  --stage: after the checks pass, lay out each pod's volumes and mounts under
  ROOT/<binary>/ (Secrets filled from KEYDIR's farmctl keygen files) and write the
  argv of its init containers (ROOT/<binary>.init.N) and of its binary
  (ROOT/<binary>.args, endpoints moved to 127.0.0.1, the coordinator's as
  @COORDINATOR@) and the binary's env (ROOT/<binary>.env), NUL-separated, to run
  them on this machine.
Exit codes: 0 every check passed, 1 a check failed (one line per problem on stderr,
"FILE: Kind/name: what"), 2 usage error.

What it checks, with kubectl and nothing else online:
- kubectl kustomize DIR renders, and its objects are exactly those of DIR's files;
- each object decodes into kubectl's typed API objects (`kubectl set env|selector
  --local`: wrong types, unknown apiVersion/kind, bad quantities are refused), and no
  field of the file is dropped by that decoding (an unknown or misspelled field);
- every --flag of a container exists in its binary's --help, every $(VAR) is defined;
- every volume is mounted and every mount has a volume; a Secret is one README.md
  creates (`kubectl create secret generic NAME --from-file=...`); every file a flag
  names is in a Secret or copied out of one by an init container `install -m MODE -t
  DIR FILE...`, and a secret key (BASE.key) is such a copy with no group or other
  bits (the binaries refuse it otherwise, and a Secret file is group-readable under
  fsGroup); Secret mounts are read-only; --store and --cache-dir are writable;
- the worker: a DaemonSet on schedfarm.io/benchmark=true nodes tolerating their
  taint, terminationGracePeriodSeconds > --drain-timeout-s, Guaranteed QoS with whole
  CPUs (requests == limits), its sandboxes' --memory-limit-mb within the pod's memory;
- the coordinator and the learner: required node affinity away from benchmark nodes
  and no toleration of their taint; the coordinator one StatefulSet replica with its
  store on a claim, a Service reaching its endpoint and metrics ports (with the
  prometheus.io annotations); the others' --coordinator naming that Service and port.
Not checked (needs an API server): server-side validation (names, required fields,
value ranges), defaulting, admission, what the cluster supports.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

KUBECTL = os.environ.get("KUBECTL", "kubectl")
BINARY_ENV = {
    "farm-coordinator": "FARM_COORDINATOR_BIN",
    "farm-worker": "FARM_WORKER_BIN",
    "farm-learner": "FARM_LEARNER_BIN",
}
BENCHMARK_LABEL = "schedfarm.io/benchmark"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet")
# Flags whose value is a path inside the container, and what it must be.
SECRET_FILE_FLAGS = ("--server-key", "--allow-list")
KEY_PAIR_FLAGS = ("--curve-key",)  # BASE: BASE.key and BASE.pub
WRITABLE_DIR_FLAGS = ("--store", "--cache-dir")
STAGED_NODE_NAME = "k8s-test-node"

problems = []


def problem(where, text):
    problems.append(f"{where}: {text}")


def kubectl(*args, stdin=None):
    run = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True,
                         errors="replace")
    return run.returncode, run.stdout, run.stderr.strip()


def json_stream(text):
    """The JSON objects of text, one after another (kubectl -o json of many objects)."""
    decoder, objects, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return objects
        value, at = decoder.raw_decode(text, at)
        objects.extend(value["items"] if value.get("kind") == "List" else [value])


def objects_as_written(path_or_dash, stdin=None):
    """The objects of a YAML file as written (unstructured, nothing dropped)."""
    rc, out, err = kubectl("patch", "--local", "--type", "merge", "-f", path_or_dash, "-p", "{}",
                           "-o", "json", stdin=stdin)
    return (json_stream(out), None) if rc == 0 else ([], err)


def name_of(obj):
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


def dropped_fields(written, typed, path=""):
    """Paths of written that the typed round trip lost: unknown or misspelled fields.
    A zero value (false, 0, "", {}, []) may be dropped as well by omitempty: such a
    field is not reported, known or not (it changes nothing either way)."""
    if isinstance(written, dict):
        if not isinstance(typed, dict):
            return [path]
        lost = []
        for key, value in written.items():
            sub = f"{path}.{key}" if path else key
            if key in typed:
                lost += dropped_fields(value, typed[key], sub)
            elif value not in (False, 0, "", {}, [], None):
                lost.append(sub)
        return lost
    if isinstance(written, list):
        if not isinstance(typed, list) or len(typed) < len(written):
            return [path]
        return [p for i, v in enumerate(written) for p in dropped_fields(v, typed[i], f"{path}[{i}]")]
    return []


def check_typed(where, obj, scratch):
    """Decodes obj into kubectl's typed objects offline and compares the round trip."""
    path = os.path.join(scratch, "object.json")
    with open(path, "w") as out:
        json.dump(obj, out)
    kind = obj.get("kind")
    if kind in WORKLOAD_KINDS:
        # set env appends a variable: every written path keeps its place.
        args = ["set", "env", "--local", "-f", path, "SCHEDFARM_TYPED_CHECK=1", "-o", "json"]
    elif kind == "Service":
        selector = obj.get("spec", {}).get("selector") or {}
        if not selector:
            problem(where, "a Service without a selector (the test cannot decode it offline)")
            return
        pairs = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        args = ["set", "selector", "--local", "-f", path, pairs, "-o", "json"]
    else:  # decoded all the same: a misspelled kind or version is refused
        args = ["set", "selector", "--local", "-f", path, "any=thing", "-o", "json"]
    rc, out, err = kubectl(*args)
    if rc != 0 and "only supported for Services" not in err:
        message = err.splitlines()[0].replace(f'"{path}"', "it")
        problem(where, "kubectl's typed decoding refuses it: " + message)
        return
    if kind not in WORKLOAD_KINDS + ("Service",):
        problem(where, f"kind {kind}: no offline check of its fields (extend k8s_manifest_check.py)")
        return
    for lost in dropped_fields(obj, json_stream(out)[0]):
        problem(where, f"unknown field {lost} (kubectl's typed decoding drops it)")


def documented_secrets(readme):
    """{secret name: {key: source file name}} of README.md's `create secret generic` lines."""
    secrets = {}
    try:
        text = open(readme).read().replace("\\\n", " ")
    except OSError as e:
        problem(readme, f"cannot read it: {e.strerror}")
        return secrets
    for line in text.splitlines():
        match = re.search(r"create secret generic (\S+)(.*)", line)
        if match:
            keys = secrets.setdefault(match.group(1), {})
            for source in re.findall(r"--from-file[= ](\S+)", match.group(2)):
                key, _, path = source.rpartition("=")
                keys[key or os.path.basename(path)] = os.path.basename(path)
    return secrets


def help_flags(binary):
    """{flag: takes a value} from the binary's --help."""
    path = os.environ.get(BINARY_ENV[binary], "")
    run = subprocess.run([path, "--help"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{path or BINARY_ENV[binary] + ' (unset)'}: --help failed ({run.returncode})")
    flags = {}
    for flag, metavar in re.findall(r"(--[a-z][a-z0-9-]*)( [A-Z][A-Z0-9_,.:]*)?", run.stdout):
        flags[flag] = flags.get(flag, False) or bool(metavar)
    return flags


def quantity(text):
    """A Kubernetes quantity ("4", "500m", "16Gi", "1G") as a number."""
    match = re.fullmatch(r"([0-9.]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?", str(text))
    if not match:
        return None
    scale = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
    return float(match.group(1)) * scale[match.group(2)]


def parse_argv(where, binary, argv, flags):
    """{flag: value} of argv, checking every flag against the binary's --help."""
    values, i = {}, 0
    while i < len(argv):
        token = argv[i]
        i += 1
        if not token.startswith("--"):
            problem(where, f"{binary}: unexpected argument {token!r}")
            continue
        flag, eq, value = token.partition("=")
        if flag not in flags:
            problem(where, f"{binary} has no flag {flag} (not in its --help)")
            continue
        if flags[flag] and not eq:
            if i == len(argv):
                problem(where, f"{binary}: {flag} needs a value")
                continue
            value, i = argv[i], i + 1
        values[flag] = value
    return values


def mount_for(path, mounts):
    """The mount holding path (the longest mountPath prefix), or None."""
    best = None
    for mount in mounts:
        root = mount["mountPath"].rstrip("/")
        if (path == root or path.startswith(root + "/")) and (
                best is None or len(root) > len(best["mountPath"].rstrip("/"))):
            best = mount
    return best


def secret_files(volume, secrets):
    """{file name in the mount: secret key} of a secret volume."""
    secret = volume["secret"]
    keys = secrets.get(secret.get("secretName"), {})
    if "items" in secret:
        return {item["path"]: item["key"] for item in secret["items"]}
    return {key: key for key in keys}


class Pod:
    """A workload's pod template with its volumes (claim templates included)."""

    def __init__(self, obj):
        self.template = obj.get("spec", {}).get("template", {})
        self.spec = self.template.get("spec", {})
        self.labels = self.template.get("metadata", {}).get("labels", {})
        self.volumes = {v.get("name"): v for v in self.spec.get("volumes", [])}
        for claim in obj.get("spec", {}).get("volumeClaimTemplates", []):
            self.volumes[claim.get("metadata", {}).get("name")] = {"claim": claim}

    def containers(self):
        return self.spec.get("initContainers", []) + self.spec.get("containers", [])


def check_volumes(where, pod, secrets):
    mounted = set()
    for container in pod.containers():
        for mount in container.get("volumeMounts", []):
            name = mount.get("name")
            mounted.add(name)
            volume = pod.volumes.get(name)
            if volume is None:
                problem(where, f"container {container.get('name')} mounts {name}, which is no volume")
            elif "secret" in volume and not mount.get("readOnly"):
                problem(where, f"container {container.get('name')}: the Secret volume {name} is not readOnly")
    for name, volume in pod.volumes.items():
        if name not in mounted:
            problem(where, f"volume {name} is mounted by no container")
        if "secret" in volume:
            secret = volume["secret"].get("secretName")
            if secret not in secrets:
                problem(where, f"volume {name}: Secret {secret} is not one README.md creates "
                        "(the operator makes the Secrets; they are never in the manifests)")
                continue
            for item in volume["secret"].get("items", []):
                if item.get("key") not in secrets[secret]:
                    problem(where, f"volume {name}: README.md's Secret {secret} has no key {item.get('key')}")
        elif "emptyDir" not in volume and "claim" not in volume:
            problem(where, f"volume {name}: only secret, emptyDir and claim volumes are checked")


def file_in_mounts(path, container, pod, secrets, installed):
    """How path exists in the container: "secret", "installed" or None (it does not)."""
    mount = mount_for(path, container.get("volumeMounts", []))
    volume = pod.volumes.get(mount["name"]) if mount else None
    relative = os.path.relpath(path, mount["mountPath"]) if mount else None
    if volume is not None and "secret" in volume and relative in secret_files(volume, secrets):
        return "secret"
    if volume is not None and (mount["name"], relative) in installed:
        return "installed"
    return None


def check_install(where, pod, container, secrets, installed):
    """An init container `install -m MODE -t DIR FILE...` copying Secret files into an
    emptyDir: records {(volume, file): mode} in installed."""
    argv = container.get("command", [])[1:] + container.get("args", [])
    if len(argv) < 5 or argv[0] != "-m" or argv[2] != "-t" or not re.fullmatch(r"0?[0-7]{3}", argv[1]):
        problem(where, f"init container {container.get('name')}: only `install -m MODE -t DIR FILE...` "
                "is understood")
        return
    mode, folder, files = int(argv[1], 8), argv[3], argv[4:]
    mount = mount_for(folder, container.get("volumeMounts", []))
    if mount is None or "emptyDir" not in pod.volumes.get(mount["name"], {}) or mount.get("readOnly"):
        problem(where, f"init container {container.get('name')}: {folder} is on no writable emptyDir")
        return
    for file in files:
        if file_in_mounts(file, container, pod, secrets, installed) != "secret":
            problem(where, f"init container {container.get('name')}: {file} is in no Secret it mounts")
        target = os.path.join(os.path.relpath(folder, mount["mountPath"]), os.path.basename(file))
        installed[(mount["name"], os.path.normpath(target))] = mode


def check_paths(where, binary, values, container, pod, secrets, installed):
    """The files and folders the flags name are in the container's mounts."""
    wanted = [(values[f], f) for f in SECRET_FILE_FLAGS if f in values]
    wanted += [(values[f] + suffix, f) for f in KEY_PAIR_FLAGS if f in values for suffix in (".key", ".pub")]
    for path, flag in wanted:
        found = file_in_mounts(path, container, pod, secrets, installed)
        if found is None:
            problem(where, f"{binary} {flag}: {path} is in no Secret nor copied there by an init container")
        elif path.endswith(".key") and found == "secret":
            # Under fsGroup the kubelet makes Secret files group-readable whatever their
            # defaultMode (kubernetes issue 57923); without it they are root's only.
            problem(where, f"{binary} {flag}: {path} is read straight from a Secret, where a "
                    "non-root user gets it group-readable, which the binaries refuse: copy it "
                    "with an init container (install -m 0600)")
        elif path.endswith(".key"):
            mount = mount_for(path, container["volumeMounts"])
            mode = installed[(mount["name"], os.path.relpath(path, mount["mountPath"]))]
            if mode & 0o077:
                problem(where, f"{binary} {flag}: {path} is installed with mode {mode:o}, "
                        "which the binaries refuse for a secret key (group or others may read it)")
    for flag in WRITABLE_DIR_FLAGS:
        if flag in values:
            mount = mount_for(values[flag], container.get("volumeMounts", []))
            volume = pod.volumes.get(mount["name"]) if mount else None
            if volume is None or mount.get("readOnly") or "secret" in volume:
                problem(where, f"{binary} {flag}: {values[flag]} is on no writable volume")


def host_port(endpoint):
    match = re.fullmatch(r"(?:tcp://)?([^:/]+):([0-9]+)", endpoint or "")
    return (match.group(1), int(match.group(2))) if match else (None, None)


def keeps_off_benchmark_nodes(pod):
    """True when every required node selector term keeps the pod off benchmark nodes."""
    required = (pod.spec.get("affinity", {}).get("nodeAffinity", {})
                .get("requiredDuringSchedulingIgnoredDuringExecution", {}))
    terms = required.get("nodeSelectorTerms", [])
    return bool(terms) and all(
        any(e.get("key") == BENCHMARK_LABEL and e.get("operator") == "NotIn" and "true" in e.get("values", [])
            for e in term.get("matchExpressions", []))
        for term in terms)


def check_worker(where, obj, pod, container, values):
    if obj.get("kind") != "DaemonSet":
        problem(where, "the worker should be a DaemonSet (one per benchmark node)")
    if pod.spec.get("nodeSelector", {}).get(BENCHMARK_LABEL) != "true":
        problem(where, f"the worker's nodeSelector lacks {BENCHMARK_LABEL}: \"true\"")
    if not any(t.get("key") == BENCHMARK_LABEL for t in pod.spec.get("tolerations", [])):
        problem(where, f"the worker does not tolerate the {BENCHMARK_LABEL} taint")
    grace = pod.spec.get("terminationGracePeriodSeconds", 30)
    if "--drain-timeout-s" not in values:
        problem(where, "the worker must pass --drain-timeout-s (its grace period is checked against it)")
    elif not grace > int(values["--drain-timeout-s"]):
        problem(where, f"terminationGracePeriodSeconds {grace} <= the worker's --drain-timeout-s "
                f"{values['--drain-timeout-s']}: the kubelet would kill the drain")
    for each in pod.containers():
        resources = each.get("resources", {})
        requests, limits = resources.get("requests", {}), resources.get("limits", {})
        for resource in ("cpu", "memory"):
            limit = limits.get(resource)
            if limit is None or quantity(requests.get(resource, limit)) != quantity(limit):
                problem(where, f"container {each.get('name')}: {resource} requests != limits "
                        "(the pod would not be Guaranteed QoS)")
    limits = container.get("resources", {}).get("limits", {})
    cpus = quantity(limits.get("cpu", "0")) or 0
    if cpus != int(cpus) or cpus < 2:
        problem(where, f"the worker's cpu {limits.get('cpu')} is not a whole number of at least 2 "
                "(the static CPU manager gives exclusive cores only to whole CPUs)")
        return
    if "--memory-limit-mb" not in values:
        problem(where, "the worker must pass --memory-limit-mb (its default divides the host's RAM, "
                "not the pod's limit)")
        return
    slots = int(values.get("--compile-slots", max(1, int(cpus) - 1)))
    children = int(values.get("--children", slots + 1))
    sandboxes = children * int(values["--memory-limit-mb"]) * 2**20
    memory = quantity(limits.get("memory", "0")) or 0
    if sandboxes >= memory:
        problem(where, f"{children} sandboxes x --memory-limit-mb {values['--memory-limit-mb']} "
                f"do not fit in the pod's memory limit {limits.get('memory')}")


def check_off_benchmark_nodes(where, pod):
    if not keeps_off_benchmark_nodes(pod):
        problem(where, f"no required node affinity {BENCHMARK_LABEL} NotIn [\"true\"] in every term")
    if any(t.get("key") in (BENCHMARK_LABEL, None) for t in pod.spec.get("tolerations", [])):
        problem(where, f"it tolerates the {BENCHMARK_LABEL} taint of the benchmark nodes")


def service_port(services, pod_labels, container, port):
    """(service, service port) reaching the container's port, or (None, None)."""
    named = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
    for service in services.values():
        selector = service.get("spec", {}).get("selector", {})
        if not selector or any(pod_labels.get(k) != v for k, v in selector.items()):
            continue
        for entry in service.get("spec", {}).get("ports", []):
            target = entry.get("targetPort", entry.get("port"))
            if named.get(target, target) == port:
                return service, entry
    return None, None


def check_coordinator(where, obj, pod, container, values, services):
    if obj.get("kind") != "StatefulSet" or obj.get("spec", {}).get("replicas", 1) != 1:
        problem(where, "the coordinator should be a StatefulSet of one replica (the store's only writer)")
    if obj.get("spec", {}).get("serviceName") not in services:
        problem(where, f"serviceName {obj.get('spec', {}).get('serviceName')} is no Service of the manifests")
    store = mount_for(values.get("--store", ""), container.get("volumeMounts", []))
    if store is None or "claim" not in pod.volumes.get(store["name"], {}):
        problem(where, "the coordinator's --store is not on a volumeClaimTemplate (it would not persist)")
    _, port = host_port(values.get("--endpoint", "tcp://127.0.0.1:5555"))
    service, entry = service_port(services, pod.labels, container, port)
    if service is None:
        problem(where, f"no Service reaches the coordinator's --endpoint port {port}")
    _, metrics = host_port(values.get("--metrics-endpoint"))
    if metrics is None:
        problem(where, "the coordinator has no --metrics-endpoint HOST:PORT")
        return service, entry
    metrics_service, metrics_entry = service_port(services, pod.labels, container, metrics)
    annotations = (metrics_service or {}).get("metadata", {}).get("annotations", {})
    if metrics_service is None:
        problem(where, f"no Service reaches the coordinator's metrics port {metrics}")
    elif annotations.get("prometheus.io/scrape") != "true" or \
            annotations.get("prometheus.io/port") != str(metrics_entry.get("port")):
        problem(where, f"Service {metrics_service['metadata']['name']} lacks prometheus.io/scrape "
                f"\"true\" and prometheus.io/port \"{metrics_entry.get('port')}\"")
    return service, entry


def check_container(where, obj, pod, container, secrets, installed, help_of, coordinator_service):
    """The container's command, flags, paths and placement; returns (binary, {flag: value})."""
    command = container.get("command", [])
    binary = os.path.basename(command[0]) if command else None
    if binary not in BINARY_ENV:
        problem(where, f"container {container.get('name')}: command {command} runs none of "
                f"{sorted(BINARY_ENV)}")
        return None, {}
    argv = command[1:] + container.get("args", [])
    defined = {e.get("name") for e in container.get("env", [])}
    for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", " ".join(argv)):
        if var not in defined:
            problem(where, f"{binary}: $({var}) is no env variable of the container")
    values = parse_argv(where, binary, argv, help_of[binary])
    check_paths(where, binary, values, container, pod, secrets, installed)
    if binary == "farm-worker":
        check_worker(where, obj, pod, container, values)
    else:
        check_off_benchmark_nodes(where, pod)
    if binary != "farm-coordinator" and coordinator_service[0] is not None:
        host, port = host_port(values.get("--coordinator"))
        service, entry = coordinator_service
        if (host or "").split(".")[0] != service["metadata"]["name"] or port != entry.get("port"):
            problem(where, f"{binary} --coordinator {values.get('--coordinator')} is not "
                    f"tcp://{service['metadata']['name']}:{entry.get('port')}")
    return binary, values


def runs_coordinator(obj):
    return any(c.get("command", [""])[0].endswith("farm-coordinator") for c in Pod(obj).containers())


def check_dir(folder, scratch):
    """Every check of the folder; returns the workloads' containers for staging."""
    secrets = documented_secrets(os.path.join(folder, "README.md"))
    files = sorted(f for f in os.listdir(folder)
                   if f.endswith((".yaml", ".yml")) and f != "kustomization.yaml")
    objects = []  # (file, object)
    for name in files:
        found, err = objects_as_written(os.path.join(folder, name))
        if err:
            problem(name, "kubectl cannot read it: " + err.splitlines()[0])
        objects += [(name, obj) for obj in found]
    for name, obj in objects:
        check_typed(f"{name}: {name_of(obj)}", obj, scratch)

    rc, rendered, err = kubectl("kustomize", folder)
    if rc != 0:
        problem("kustomization.yaml", "kubectl kustomize refuses it: " + err.splitlines()[0])
    else:
        found, err = objects_as_written("-", stdin=rendered)
        rendered_names = sorted(name_of(o) for o in found)
        if err or rendered_names != sorted(name_of(o) for _, o in objects):
            problem("kustomization.yaml", f"renders {rendered_names}, not the objects of {files}")

    services = {o["metadata"]["name"]: o for _, o in objects if o.get("kind") == "Service"}
    help_of = {binary: help_flags(binary) for binary in BINARY_ENV}
    staged, coordinator_service = [], (None, None)
    workloads = [(n, o) for n, o in objects if o.get("kind") in WORKLOAD_KINDS]
    # The coordinator first: the others' --coordinator must reach its Service.
    for name, obj in sorted(workloads, key=lambda w: not runs_coordinator(w[1])):
        where = f"{name}: {name_of(obj)}"
        pod = Pod(obj)
        selector = obj.get("spec", {}).get("selector", {}).get("matchLabels", {})
        if not selector or any(pod.labels.get(k) != v for k, v in selector.items()):
            problem(where, "spec.selector.matchLabels does not match the pod template's labels")
        check_volumes(where, pod, secrets)
        installed = {}  # (volume, file): mode, of the init containers' install
        for container in pod.spec.get("initContainers", []):
            check_install(where, pod, container, secrets, installed)
        for container in pod.spec.get("containers", []):
            binary, values = check_container(where, obj, pod, container, secrets, installed, help_of,
                                             coordinator_service)
            if binary == "farm-coordinator":
                coordinator_service = check_coordinator(where, obj, pod, container, values, services)
            if binary:
                staged.append((binary, container, pod))
    if not any(b == "farm-coordinator" for b, *_ in staged):
        problem(folder, "no workload runs farm-coordinator")
    return secrets, staged


def stage(root, keydir, secrets, staged):
    """Lays out each pod's volumes under ROOT/<binary>/ (Secrets filled from KEYDIR with
    their defaultMode) with its containers' mounts as links to them, and writes the
    init containers' and the binary's argv (ROOT/<binary>.init.N, ROOT/<binary>.args)
    and the binary's env (ROOT/<binary>.env), NUL-separated, paths moved under ROOT."""
    for binary, container, pod in staged:
        base = os.path.join(root, binary)
        for name, volume in pod.volumes.items():
            folder = os.path.join(base, ".volumes", name)
            os.makedirs(folder)
            if "secret" in volume:
                sources = secrets[volume["secret"]["secretName"]]
                for file, key in secret_files(volume, secrets).items():
                    shutil.copy(os.path.join(keydir, sources[key]), os.path.join(folder, file))
                    os.chmod(os.path.join(folder, file), volume["secret"].get("defaultMode", 0o644))
        for each in pod.containers():
            for mount in each.get("volumeMounts", []):
                link = base + mount["mountPath"]
                os.makedirs(os.path.dirname(link), exist_ok=True)
                if not os.path.islink(link):
                    os.symlink(os.path.join(base, ".volumes", mount["name"]), link)
        mounts = [m for each in pod.containers() for m in each.get("volumeMounts", [])]

        def local(value):  # a path in a mount, moved under base
            return base + value if value.startswith("/") and mount_for(value, mounts) else value

        for number, init in enumerate(pod.spec.get("initContainers", [])):
            argv = [local(a) for a in init.get("command", []) + init.get("args", [])]
            with open(os.path.join(root, f"{binary}.init.{number}"), "w") as f:
                f.write("".join(a + "\0" for a in argv))
        env = {}
        for entry in container.get("env", []):
            field = entry.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            node_name = field == "spec.nodeName"
            env[entry["name"]] = STAGED_NODE_NAME if node_name else local(entry.get("value", ""))
        argv = [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env[m.group(1)], a)
                for a in container.get("command", [])[1:] + container.get("args", [])]
        # Endpoints on this machine: the coordinator on free ports, the others to it.
        rewritten = {"--endpoint": "tcp://127.0.0.1:*", "--metrics-endpoint": "127.0.0.1:0",
                     "--coordinator": "@COORDINATOR@"}
        out, previous = [], None
        for token in argv:
            flag, eq, value = token.partition("=")
            if previous in rewritten:
                out.append(rewritten[previous])
            elif flag.startswith("--") and eq:
                out.append(f"{flag}={rewritten.get(flag, local(value))}")
            else:
                out.append(local(token))
            previous = token
        with open(os.path.join(root, binary + ".args"), "w") as f:
            f.write("".join(a + "\0" for a in out))
        with open(os.path.join(root, binary + ".env"), "w") as f:
            f.write("".join(f"{k}={v}\0" for k, v in env.items()))


def main(argv):
    if len(argv) not in (2, 5) or (len(argv) == 5 and argv[2] != "--stage"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        secrets, staged = check_dir(argv[1], scratch)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        return 1
    print(f"{argv[1]}: every check passed ({len(staged)} containers)")
    if len(argv) == 5:
        stage(argv[3], argv[4], secrets, staged)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
