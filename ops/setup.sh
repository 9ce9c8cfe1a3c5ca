#!/usr/bin/env bash
# Installs everything schedfarm needs to build and test on Debian 12, idempotently.
# Safe to run again: packages already present are not touched, apt runs only when
# something is missing.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  libzmq3-dev cppzmq-dev
  libprotobuf-dev protobuf-compiler
  libtorch-dev
  libopenblas0-pthread
  libhalide14-0-dev
  librocksdb-dev libzstd-dev
  libyaml-cpp-dev
  prometheus-cpp-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-dev libonnx-testdata
  libxgboost-dev
  python3 python3-torch python3-torchvision python3-onnx python3-numpy
)

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
