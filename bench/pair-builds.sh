#!/usr/bin/env bash
# This tree's build against another build, paired, the CLI as users run it (bench/timer.py: the
# two commands alternate, the ratio is the median of the pairs'): v0 and v1 at 1080p, 100 and
# 600 frames, on the gpu backend and under auto; and each build's start-up trace. For the GPU
# machine, where a change's effect must be told from the lease's own drift.
#
#   BASE=dir   a tree with the other build's bin/ and dist/ (node_modules, build/ and models/
#              are linked from this tree where it has none: the same packages and addon)
#   OUT=dir CLIPS=dir RUNS=5 MAKE_CLIP=path/to/make-clip.py   bash bench/pair-builds.sh
# Writes $OUT/pairs.ndjson (one line per command) and $OUT/trace-{this,base}-{v0,v1}.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
BASE=${BASE:?a tree with the other build}; OUT=${OUT:-bench/results}; CLIPS=${CLIPS:-/tmp/sbs}; RUNS=${RUNS:-5}
mkdir -p "$OUT" "$CLIPS"
for p in node_modules build models; do [ -e "$BASE/$p" ] || ln -s "$PWD/$p" "$BASE/$p"; done
[ -f "$CLIPS/c1080/ref.y4m" ] || python3 "${MAKE_CLIP:-../shared/device/make-clip.py}" 1920 1080 600 "$CLIPS/c1080" >&2
io="-r $CLIPS/c1080/ref.y4m -d $CLIPS/c1080/dis.y4m"; o="-q --json -o /tmp/pair-builds.json"; v1="-m version=vmaf_v1.0.16_3d0h"
this="node bin/vmaf-stream $io"; base="node $BASE/bin/vmaf-stream $io"
# First runs fill each build's caches (NVIDIA's shader cache, the start-up cache): not timed.
for c in "$this" "$base"; do $c --backend gpu --frame_cnt 5 $o; $c --backend gpu $v1 --frame_cnt 5 $o; done
for m in v0 v1; do
  args=$([ $m = v1 ] && echo "$v1")
  VMAF_STREAM_TRACE=1 $this --backend gpu $args --frame_cnt 100 $o 2> "$OUT/trace-this-$m.txt"
  VMAF_STREAM_TRACE=1 $base --backend gpu $args --frame_cnt 100 $o 2> "$OUT/trace-base-$m.txt"
done
pair() { python3 bench/timer.py -n "$RUNS" --warmup 1 --label "$1" --vs "$base $2 $o" -- "$this $2 $o" | tee -a "$OUT/pairs.ndjson"; }
pair "v0 1080p 100 frames gpu: this vs base" "--backend gpu --frame_cnt 100"
pair "v0 1080p 600 frames gpu: this vs base" "--backend gpu"
pair "v1 1080p 100 frames gpu: this vs base" "--backend gpu $v1 --frame_cnt 100"
pair "v1 1080p 600 frames gpu: this vs base" "--backend gpu $v1"
pair "v0 1080p 30 frames auto: this vs base" "--frame_cnt 30"
