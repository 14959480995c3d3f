#!/usr/bin/env bash
# Located frames (src/decode/located-frames.ts: each plane read once, from the file into the
# GPU's staging memory) against the old path of the same build (VMAF_STREAM_LOCATED=0: read
# into the pool, then copied into staging), paired (bench/timer.py), the CLI as users run it
# on the gpu backend: v0 at 1080p (600 and 1500 frames, and 1500 on 3 cores, issue 9's
# goal), v1 at 1080p (600 frames) and v0 at 2160p (200 frames). With LIBVMAF_CUDA set, the
# same rows of libvmaf's CUDA build in the same loop, for issue 9's ratio.
#
#   OUT=dir CLIPS=dir RUNS=5 MAKE_CLIP=path/to/make-clip.py [LIBVMAF_CUDA=path] bash bench/located-frames.sh
# Writes $OUT/located.ndjson (one line per command).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/results}; CLIPS=${CLIPS:-/tmp/sbs}; RUNS=${RUNS:-5}
mkdir -p "$OUT" "$CLIPS"
clip() { [ -f "$CLIPS/$1/ref.y4m" ] || python3 "${MAKE_CLIP:-../shared/device/make-clip.py}" "$2" "$3" "$4" "$CLIPS/$1" >&2; }
clip c1080 1920 1080 1500; clip c2160 3840 2160 200
o="-q --json -o /tmp/located-frames.json"; v1="-m version=vmaf_v1.0.16_3d0h"
ours() { echo "node bin/vmaf-stream -r $CLIPS/$1/ref.y4m -d $CLIPS/$1/dis.y4m --backend gpu $2 $o"; }
# A first run fills NVIDIA's shader cache and the start-up cache: not timed.
eval "$(ours c1080 "--frame_cnt 5")"; eval "$(ours c1080 "$v1 --frame_cnt 5")"
pair() { # label, clip, args, [prefix]
  python3 bench/timer.py -n "$RUNS" --warmup 1 --label "$1" --vs "VMAF_STREAM_LOCATED=0 ${4:-} $(ours "$2" "$3")" -- "${4:-} $(ours "$2" "$3")" | tee -a "$OUT/located.ndjson"
}
pair "v0 1080p 600 frames: located vs read and copied" c1080 "--frame_cnt 600"
pair "v0 1080p 1500 frames: located vs read and copied" c1080 ""
pair "v0 1080p 1500 frames, 3 cores: located vs read and copied" c1080 "" "taskset -c 0-2"
pair "v1 1080p 600 frames: located vs read and copied" c1080 "$v1 --frame_cnt 600"
pair "v0 2160p 200 frames: located vs read and copied" c2160 ""
if [ -n "${LIBVMAF_CUDA:-}" ]; then
  cuda() { echo "$LIBVMAF_CUDA -r $CLIPS/$1/ref.y4m -d $CLIPS/$1/dis.y4m $2 -q --json -o /tmp/located-cuda.json"; }
  for row in "c1080|--frame_cnt 100|v0 1080p 100 frames" "c1080|--frame_cnt 600|v0 1080p 600 frames" "c1080||v0 1080p 1500 frames" "c2160||v0 2160p 200 frames"; do
    IFS='|' read -r c a label <<<"$row"
    python3 bench/timer.py -n "$RUNS" --warmup 1 --label "$label: located vs libvmaf CUDA" --vs "$(cuda "$c" "$a")" -- "$(ours "$c" "$a")" | tee -a "$OUT/located.ndjson"
  done
  python3 bench/timer.py -n "$RUNS" --warmup 1 --label "v0 1080p 1500 frames, 3 cores: located vs libvmaf CUDA" --vs "$(cuda c1080 "")" -- "taskset -c 0-2 $(ours c1080 "")" | tee -a "$OUT/located.ndjson"
fi
