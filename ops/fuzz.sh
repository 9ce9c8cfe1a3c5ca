#!/usr/bin/env bash
# Fuzzes the parsers of untrusted input with libFuzzer (clang, ASan + UBSan + leak
# checks): wire envelopes, campaign YAML, pipeline YAML and ONNX models (fuzz/).
#
# Usage: ops/fuzz.sh [--runs N] [--build-dir DIR] [--scratch DIR] [--merge] [TARGET...]
#   --runs N       iterations per target (default 1000000)
#   --build-dir    the clang build folder (default build-fuzz/ at the repository root)
#   --scratch DIR  where new corpus entries and crash artifacts go (default
#                  <build-dir>/fuzz-scratch); the committed corpus is only read...
#   --merge        ...unless --merge: then inputs that add coverage are merged into
#                  fuzz/corpus/<target>/ after the run
#   TARGET         wire_envelope campaign_yaml pipeline_yaml onnx_import (default all)
# Installs clang and its runtime if missing (Debian 12), configures <build-dir> with
# -DSCHEDFARM_FUZZ=ON (every library compiled with the sanitizers), builds the
# fuzzers and runs each from the repository root, one after the other. New inputs
# found in a run are kept in <scratch>/<target>/corpus/, so the next run goes on
# from there. Prints one line per target (runs, exec/s, crashes, leaks, timeouts,
# out-of-memory, wall time).
# Exit codes: 0 nothing found; 1 a target crashed, leaked, timed out (10 s on one
# input) or went over 4 GB (the reproducer is in <scratch>/<target>/artifacts/, its
# report in <scratch>/<target>/fuzz.log; replay it with <build-dir>/fuzz/<target>_fuzzer
# FILE, or with the normal build's <target>_fuzz_replay FILE); 2 bad arguments; 3 the
# build failed.
# Time, measured on 2 shared cores: the first build about 10 min (ccache makes later
# builds fast); 1,000,000 runs took 47 s for wire_envelope (21,700 exec/s), 77 s for
# onnx_import (13,200/s), 9 to 15 min for campaign_yaml (1,100-1,800/s) and 37 min for
# pipeline_yaml (450/s): about an hour for all four.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

runs=1000000
build="$root/build-fuzz"
scratch=""
merge=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --build-dir) build="$2"; shift 2 ;;
    --scratch) scratch="$2"; shift 2 ;;
    --merge) merge=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
all_targets=(wire_envelope campaign_yaml pipeline_yaml onnx_import)
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  case " ${all_targets[*]} " in
    *" $t "*) ;;
    *) echo "fuzz.sh: unknown target '$t' (known: ${all_targets[*]})" >&2; exit 2 ;;
  esac
done
scratch="${scratch:-$build/fuzz-scratch}"

# The largest input each fuzzer makes (the harnesses refuse more than 64 KiB, ONNX 256 KiB).
declare -A max_len=([wire_envelope]=16384 [campaign_yaml]=8192 [pipeline_yaml]=8192
                    [onnx_import]=65536)

"$root/ops/setup.sh" clang libclang-rt-14-dev
# shellcheck source=ops/ccache_env.sh
source "$root/ops/ccache_env.sh"

sanitize="-fsanitize=address,undefined -fsanitize=fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DSCHEDFARM_FUZZ=ON \
    -DCMAKE_C_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS="$sanitize" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null ||
    { echo "fuzz.sh: configuring $build failed" >&2; exit 3; }
fi
jobs="${SCHEDFARM_JOBS:-$(nproc)}"
cmake --build "$build" -j "$jobs" --target "${targets[@]/%/_fuzzer}" ||
  { echo "fuzz.sh: building the fuzzers failed" >&2; exit 3; }

export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=0
cd "$root"  # the campaign target resolves the seeds' pipeline paths from here
for t in "${targets[@]}"; do
  out="$scratch/$t"
  rm -rf "$out/artifacts"
  mkdir -p "$out/corpus" "$out/artifacts"
  dict=()
  [ -f "$root/fuzz/$t.dict" ] && dict=("-dict=$root/fuzz/$t.dict")
  log="$out/fuzz.log"
  start=$(date +%s)
  status=0
  "$build/fuzz/${t}_fuzzer" -runs="$runs" -max_len="${max_len[$t]}" -timeout=10 \
    -rss_limit_mb=4096 -detect_leaks=1 -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="$out/artifacts/" "$out/corpus" "$root/fuzz/corpus/$t" >"$log" 2>&1 ||
    status=$?
  wall=$(($(date +%s) - start))
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  exec_s=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  count() { find "$out/artifacts" -name "$1-*" | wc -l; }
  crashes=$(count crash) leaks=$(count leak) timeouts=$(count timeout) ooms=$(count oom)
  echo "fuzz target=$t runs=${executed:-?} exec_per_s=${exec_s:-?} crashes=$crashes" \
    "leaks=$leaks timeouts=$timeouts ooms=$ooms wall_s=$wall exit=$status log=$log"
  if [ "$status" -ne 0 ] || [ $((crashes + leaks + timeouts + ooms)) -gt 0 ]; then
    failed=1
    grep -m2 -E "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz property violated" "$log" >&2 || true
  elif [ "$merge" -eq 1 ]; then
    "$build/fuzz/${t}_fuzzer" -merge=1 -max_len="${max_len[$t]}" \
      "$root/fuzz/corpus/$t" "$out/corpus" >>"$log" 2>&1
    echo "fuzz target=$t merged: $(find "$root/fuzz/corpus/$t" -type f | wc -l) corpus files"
  fi
done
exit "$failed"
