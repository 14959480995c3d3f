#!/usr/bin/env bash
# The bench on the GPU machine, from the repository root, after
#   source ../shared/device/enter.sh    (Node on PATH, node_modules, dist/ and build/ unpacked; no npm)
# Runs, on one 1080p clip (made there by the bundled ffmpeg, ~20 s): the gpu suite, the cpu
# backend, ffmpeg decoding alone and ffmpeg's libvmaf filter, all with every core, and writes
# under $OUT (default bench/results):
#   bench.md    run.mjs's table, then bench/gpu-report.mjs's detail of the gpu suite
#   bench.json  the whole report (run.mjs's bench/results/latest.json)
#   bench.log   progress, with the gpu suite's one-line summaries (run.mjs's stderr)
#   gpu.txt     nvidia-smi
# Environment: FRAMES (clip length: end to end and latency; default 300), THREADS (default
# nproc). Extra arguments go to run.mjs: --gpu-frames N (kernel and host-memory frame counts,
# default 600), --repeat N, --gpu-software (no hardware adapter: lavapipe, tiny counts).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

if ! command -v node >/dev/null; then
  for enter in shared/device/enter.sh ../shared/device/enter.sh; do
    if [ -f "$enter" ] && [ -d .device ]; then
      # shellcheck disable=SC1090
      source "$enter"
      break
    fi
  done
fi
command -v node >/dev/null || { echo "device.sh: no node on PATH: source ../shared/device/enter.sh first" >&2; exit 2; }
for f in dist/index.js build/Release/vmaf_native.node; do
  [ -f "$f" ] || { echo "device.sh: $f is missing (dist/ and build/ come from .device/tree.tar.xz: shared/device/pack.sh)" >&2; exit 2; }
done

FRAMES=${FRAMES:-300}
THREADS=${THREADS:-$(nproc)}
{ nvidia-smi 2>&1 || echo "no nvidia-smi"; } > "$OUT/gpu.txt"

started=$(date +%s)
node bench/run.mjs --frames "$FRAMES" --threads "$THREADS" --only cpu,ffmpeg,decode,gpu "$@" > "$OUT/bench.md" 2> "$OUT/bench.log"
rc=$?
# latest.json only if this run wrote it (gpu.txt was written just before)
if [ bench/results/latest.json -nt "$OUT/gpu.txt" ]; then
  [ "$(readlink -f bench/results/latest.json)" = "$(readlink -f "$OUT/bench.json")" ] || cp bench/results/latest.json "$OUT/bench.json"
fi
[ -f "$OUT/bench.json" ] && node bench/gpu-report.mjs "$OUT/bench.json" >> "$OUT/bench.md"

# Dawn's adapter warnings left out; the bench's own lines kept.
grep -v '^Warning: ' "$OUT/bench.log" | tail -n 60
echo "device.sh: bench exit $rc after $(( $(date +%s) - started )) s; results in $OUT"
cat "$OUT/bench.md"
exit $rc
