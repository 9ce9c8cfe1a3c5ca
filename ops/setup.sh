#!/usr/bin/env bash
# Installs everything schedfarm needs to build and test on Debian 12, idempotently.
# Safe to run again: packages already present are not touched, apt runs only when
# something is missing. Usage: ops/setup.sh [EXTRA_PACKAGE...] (ops/fuzz.sh adds clang's
# fuzzing runtime).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  clang
  libzmq3-dev cppzmq-dev
  libprotobuf-dev protobuf-compiler
  libtorch-dev
  libopenblas0-pthread
  libhalide14-0-dev
  librocksdb-dev libzstd-dev
  libyaml-cpp-dev
  prometheus-cpp-dev
  libseccomp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-dev libonnx-testdata
  libxgboost-dev
  python3 python3-torch python3-torchvision python3-onnx python3-numpy
  slurmctld slurmd slurm-client munge
  chromium
  iproute2
)

# node and npm run ONNX Runtime, the onnxruntime baseline's runtime: Debian's, unless
# another package (such as NodeSource's nodejs, which carries npm) already provides both.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  PACKAGES+=(nodejs npm)
fi

PACKAGES+=("$@")
missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# Debian's kubernetes-client (kubectl 1.20), unpacked into a cache folder rather than
# installed: another kubectl may own /usr/bin/kubectl. The Kubernetes manifests' test
# runs this one ($SCHEDFARM_KUBECTL overrides it).
kube_dir="${XDG_CACHE_HOME:-$HOME/.cache}/schedfarm/kubernetes-client"
if [ ! -x "$kube_dir/usr/bin/kubectl" ]; then
  echo "setup: unpacking Debian's kubernetes-client into $kube_dir"
  download="$(mktemp -d)"
  chmod 777 "$download"  # apt's download user writes there
  (cd "$download" && apt-get download -q kubernetes-client)
  mkdir -p "$kube_dir"
  dpkg-deb -x "$download"/kubernetes-client_*.deb "$kube_dir"
  rm -rf "$download"
fi

# ONNX Runtime's CPU runtime, as the npm package onnxruntime-node ships it, for the
# onnxruntime baseline (worker/onnxruntime/). Its install script only fetches GPU extras,
# so it is skipped. A failure leaves the baseline unavailable (its results say so, its
# tests skip), not the set-up failed.
ort_version=1.30.0
ort_dir="${XDG_CACHE_HOME:-$HOME/.cache}/schedfarm/onnxruntime"
if ! grep -qs "\"version\": \"$ort_version\"" "$ort_dir/node_modules/onnxruntime-node/package.json"; then
  echo "setup: installing onnxruntime-node@$ort_version into $ort_dir"
  mkdir -p "$ort_dir"
  if ! (cd "$ort_dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
          "onnxruntime-node@$ort_version" >/dev/null); then
    echo "setup: warning: npm could not install onnxruntime-node; the onnxruntime baseline is unavailable" >&2
  fi
fi
