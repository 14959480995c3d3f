#!/usr/bin/env bash
# vmaf-stream beside libvmaf 3.2.0 (CPU on every core, and its CUDA path), the CLIs as users
# run them, on natural content from make-clip.py, on the GPU machine. Whole processes, start-up
# included, timed by bench/timer.py (wall and user+sys CPU, medians). libvmaf's binaries are
# built outside the repository by ../shared/tools/build-libvmaf.sh and never committed.
#
#   LIBVMAF=dir with vmaf-cpu, vmaf-cpu17, vmaf-cuda   OUT=results dir   CLIPS=clip dir
#   PARTS="v0 v0x4k v1 long feat float float4k startup tenbit ladder compressed parity"   RUNS=3
#   bash bench/side-by-side.sh
# Writes $OUT/times.ndjson (one line per timed command) and $OUT/parity.ndjson.
set -uo pipefail
cd "$(dirname "$0")/.."
LIBVMAF=${LIBVMAF:-.device/libvmaf}; OUT=${OUT:-bench/results}; CLIPS=${CLIPS:-/tmp/sbs}
PARTS=${PARTS:-"v0 v0x4k v1 feat startup tenbit parity"}; RUNS=${RUNS:-3}
T=$(nproc); mkdir -p "$OUT" "$CLIPS"
make_clip() { [ -f "$CLIPS/$4/ref.y4m" ] || python3 "${MAKE_CLIP:-../shared/device/make-clip.py}" "$1" "$2" "$3" "$CLIPS/$4" >&2; }
ours="node bin/vmaf-stream"; cpu="$LIBVMAF/vmaf-cpu"; cuda="$LIBVMAF/vmaf-cuda"
time_it() { # LABEL CMD [VS]
  if [ -n "${3:-}" ]; then python3 bench/timer.py -n "$RUNS" --warmup 1 --label "$1" --vs "$3" -- "$2"
  else python3 bench/timer.py -n "$RUNS" --warmup 1 --label "$1" -- "$2"; fi | tee -a "$OUT/times.ndjson"
}
io() { echo "-r $CLIPS/$1/ref.y4m -d $CLIPS/$1/dis.y4m"; }
# A y4m pair at 10 bits from the 8-bit one (samples shifted left by 2), for the 10-bit rows.
to10() {
  [ -f "$CLIPS/$2/ref.y4m" ] && return; mkdir -p "$CLIPS/$2"
  for f in ref dis; do python3 - "$CLIPS/$1/$f.y4m" "$CLIPS/$2/$f.y4m" <<'PY'
import sys, numpy as np
src, dst = open(sys.argv[1], 'rb'), open(sys.argv[2], 'wb')
hdr = src.readline().decode().split()
w, h = int(next(t[1:] for t in hdr if t[0] == 'W')), int(next(t[1:] for t in hdr if t[0] == 'H'))
hdr = [t for t in hdr if t[0] != 'C'] + ['C420p10']
dst.write((' '.join(hdr) + '\n').encode()); n = w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)
while src.readline():
    dst.write(b'FRAME\n'); dst.write((np.frombuffer(src.read(n), np.uint8).astype(np.uint16) << 2).astype('<u2').tobytes())
PY
  done
}
for part in $PARTS; do
  echo "== $part" >&2
  case $part in
    v0) make_clip 1920 1080 600 c1080
      time_it "v0 1080p600 libvmaf cpu$T" "$cpu $(io c1080) --threads $T -q --json -o /tmp/o.json"
      time_it "v0 1080p600 libvmaf cuda" "$cuda $(io c1080) -q --json -o /tmp/o.json"
      time_it "v0 1080p600 ours gpu" "$ours $(io c1080) --backend gpu -q --json -o /tmp/o.json"
      time_it "v0 1080p600 ours cpu$T" "$ours $(io c1080) --backend cpu --threads $T -q --json -o /tmp/o.json"
      time_it "v0 1080p600 ours gpu vs libvmaf cuda (paired)" "$ours $(io c1080) --backend gpu -q --json -o /tmp/o.json" "$cuda $(io c1080) -q --json -o /tmp/o.json" ;;
    v0x4k) make_clip 3840 2160 200 c2160
      time_it "v0 2160p200 libvmaf cpu$T" "$cpu $(io c2160) --threads $T -q --json -o /tmp/o.json"
      time_it "v0 2160p200 libvmaf cuda" "$cuda $(io c2160) -q --json -o /tmp/o.json"
      time_it "v0 2160p200 ours gpu" "$ours $(io c2160) --backend gpu -q --json -o /tmp/o.json" ;;
    v1) make_clip 1920 1080 600 c1080; m="-m version=vmaf_v1.0.16_3d0h"
      $cuda $(io c1080) $m -q --json -o /tmp/o.json > "$OUT/v1-cuda.txt" 2>&1; echo "cuda v1 exit $?" >> "$OUT/v1-cuda.txt"
      time_it "v1 1080p600 libvmaf cpu$T" "$cpu $(io c1080) $m --threads $T -q --json -o /tmp/o.json"
      time_it "v1 1080p600 ours gpu" "$ours $(io c1080) $m --backend gpu -q --json -o /tmp/o.json"
      time_it "v1 1080p600 ours cpu$T" "$ours $(io c1080) $m --backend cpu --threads $T -q --json -o /tmp/o.json"
      # Both generations in one run: one decode, one upload, one motion pass for both models.
      b="-m version=vmaf_v0.6.1:name=v0 -m version=vmaf_v1.0.16_3d0h:name=v1"
      time_it "v0+v1 1080p600 libvmaf cpu$T" "$cpu $(io c1080) $b --threads $T -q --json -o /tmp/o.json"
      time_it "v0+v1 1080p600 ours gpu vs v1 alone (paired)" "$ours $(io c1080) $b --backend gpu -q --json -o /tmp/o.json" "$ours $(io c1080) $m --backend gpu -q --json -o /tmp/o.json" ;;
    long) make_clip 1920 1080 1500 c1500; m="-m version=vmaf_v1.0.16_3d0h"
      # Issue 9's clip length, and its "at most 3 CPU cores" (taskset holds our process to 3;
      # libvmaf's CUDA path runs as users run it).
      time_it "v0 1080p1500 ours gpu vs libvmaf cuda (paired)" "$ours $(io c1500) --backend gpu -q --json -o /tmp/o.json" "$cuda $(io c1500) -q --json -o /tmp/o.json"
      time_it "v0 1080p1500 ours gpu on 3 cores vs libvmaf cuda (paired)" "taskset -c 0-2 $ours $(io c1500) --backend gpu -q --json -o /tmp/o.json" "$cuda $(io c1500) -q --json -o /tmp/o.json"
      time_it "v1 1080p1500 ours gpu vs libvmaf cpu$T (paired)" "$ours $(io c1500) $m --backend gpu -q --json -o /tmp/o.json" "$cpu $(io c1500) $m --threads $T -q --json -o /tmp/o.json" ;;
    feat) make_clip 1920 1080 600 c1080; f="--frame_cnt 200 --feature psnr --feature float_ssim --feature float_ms_ssim"
      time_it "psnr+ssim+ms_ssim 1080p200 libvmaf cpu$T" "$cpu $(io c1080) $f --threads $T -q --json -o /tmp/o.json"
      time_it "psnr+ssim+ms_ssim 1080p200 ours gpu" "$ours $(io c1080) $f --backend gpu -q --json -o /tmp/o.json" ;;
    float) make_clip 1920 1080 600 c1080; m="-m version=vmaf_float_v0.6.1"
      time_it "float v0 1080p600 libvmaf cpu$T" "$cpu $(io c1080) $m --threads $T -q --json -o /tmp/o.json"
      time_it "float v0 1080p600 ours gpu" "$ours $(io c1080) $m --backend gpu -q --json -o /tmp/o.json" ;;
    float4k) make_clip 3840 2160 200 c2160; m="--frame_cnt 100 -m version=vmaf_float_4k_v0.6.1"
      time_it "float 4k 2160p100 libvmaf cpu$T" "$cpu $(io c2160) $m --threads $T -q --json -o /tmp/o.json"
      time_it "float 4k 2160p100 ours gpu" "$ours $(io c2160) $m --backend gpu -q --json -o /tmp/o.json" ;;
    startup) make_clip 1920 1080 600 c1080
      for n in 1 100; do
        time_it "v0 1080p $n frames ours gpu vs libvmaf cuda (paired)" "$ours $(io c1080) --frame_cnt $n --backend gpu -q --json -o /tmp/o.json" "$cuda $(io c1080) --frame_cnt $n -q --json -o /tmp/o.json"
      done
      # The default backend (auto): runs the cpu backend finishes first never open the GPU.
      for n in 1 30; do
        time_it "v0 1080p $n frames ours auto vs libvmaf cuda (paired)" "$ours $(io c1080) --frame_cnt $n -q --json -o /tmp/o.json" "$cuda $(io c1080) --frame_cnt $n -q --json -o /tmp/o.json"
      done ;;
    tenbit) make_clip 1920 1080 600 c1080; to10 c1080 c1080p10
      time_it "v0 1080p600 10-bit libvmaf cpu$T" "$cpu $(io c1080p10) --threads $T -q --json -o /tmp/o.json"
      time_it "v0 1080p600 10-bit libvmaf cuda" "$cuda $(io c1080p10) -q --json -o /tmp/o.json"
      time_it "v0 1080p600 10-bit ours gpu" "$ours $(io c1080p10) --backend gpu -q --json -o /tmp/o.json"
      time_it "v0 1080p600 10-bit ours cpu$T" "$ours $(io c1080p10) --backend cpu --threads $T -q --json -o /tmp/o.json" ;;
    ladder) make_clip 1920 1080 600 c1080
      # One reference against 4 renditions in one run, against 4 runs of one rendition each (ours
      # and libvmaf CUDA's). The renditions: the distorted, the reference itself, and both one
      # frame later (split.py-like cuts made here), all 1080p y4m.
      for f in ref dis; do [ -f "$CLIPS/c1080/$f-s1.y4m" ] || python3 - "$CLIPS/c1080/$f.y4m" "$CLIPS/c1080/$f-s1.y4m" <<'PY'
import sys
src, dst = open(sys.argv[1], 'rb'), open(sys.argv[2], 'wb')
hdr = src.readline(); dst.write(hdr); t = dict((x[:1], x[1:]) for x in hdr.split()[1:])
w, h = int(t[b'W']), int(t[b'H']); n = 6 + w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)
src.read(n)
while (frame := src.read(n)): dst.write(frame)
PY
      done
      R="$CLIPS/c1080/dis.y4m $CLIPS/c1080/ref.y4m $CLIPS/c1080/dis-s1.y4m $CLIPS/c1080/ref-s1.y4m"
      lad=""; k=0; for d in $R; do k=$((k+1)); lad="$lad -d name=r$k:path=$d"; done
      echo "for d in $R; do $ours -r $CLIPS/c1080/ref.y4m -d \$d --frame_cnt 300 --backend gpu -q --json -o /tmp/o.json; done" > /tmp/four-ours.sh
      echo "for d in $R; do $cuda -r $CLIPS/c1080/ref.y4m -d \$d --frame_cnt 300 -q --json -o /tmp/o.json; done" > /tmp/four-cuda.sh
      one="$ours -r $CLIPS/c1080/ref.y4m $lad --frame_cnt 300 --backend gpu -q --json -o /tmp/o-{name}.json"
      time_it "ladder of 4, 1080p300, ours gpu vs 4 runs of ours (paired)" "$one" "bash /tmp/four-ours.sh"
      time_it "ladder of 4, 1080p300, ours gpu vs 4 runs of libvmaf cuda (paired)" "$one" "bash /tmp/four-cuda.sh" ;;
    compressed) make_clip 1920 1080 600 c1080  # needs the bundled ffmpeg packed (PACK_FFMPEG=1)
      ff=node_modules/@ffmpeg-installer/linux-x64/ffmpeg
      for f in ref dis; do [ -f "$CLIPS/c1080/$f.mp4" ] || $ff -v error -i "$CLIPS/c1080/$f.y4m" -c:v libx264 -preset veryfast -crf 18 -g 60 "$CLIPS/c1080/$f.mp4"; done
      mp4="-r $CLIPS/c1080/ref.mp4 -d $CLIPS/c1080/dis.mp4"
      time_it "decode only, both h264 1080p600 files at once (ffmpeg)" "$ff -v error -i $CLIPS/c1080/ref.mp4 -i $CLIPS/c1080/dis.mp4 -map 0:v -f null - -map 1:v -f null -"
      for d in 1 ${DECODERS:-4}; do
        time_it "v0 h264 1080p600 ours gpu --decoders $d" "$ours $mp4 --decoders $d --backend gpu -q --json -o /tmp/o.json"
      done
      time_it "v0 h264 1080p600 ours cpu$T" "$ours $mp4 --backend cpu --threads $T -q --json -o /tmp/o.json" ;;
    parity) make_clip 1920 1080 600 c1080
      for set in "v0:" "v1:-m version=vmaf_v1.0.16_3d0h" "v0v1:-m version=vmaf_v0.6.1:name=v0 -m version=vmaf_v1.0.16_3d0h:name=v1" "feat:--frame_cnt 200 --feature psnr --feature float_ssim --feature float_ms_ssim" ${PARITY_EXTRA:-}; do
        name=${set%%:*}; args=${set#*:}; clip=c1080; [ "$name" = v0p10 ] && clip=c1080p10
        $LIBVMAF/vmaf-cpu17 $(io $clip) $args --threads $T -q --json -o "$OUT/libvmaf-$name.json" >/dev/null 2>&1
        for b in gpu cpu; do
          $ours $(io $clip) $args --backend $b --precision 17 -q --json -o "$OUT/ours-$name-$b.json" 2>>"$OUT/parity.err"
          node bench/compare-logs.mjs "$OUT/ours-$name-$b.json" "$OUT/libvmaf-$name.json" | sed "s/^{/{\"set\":\"$name\",\"backend\":\"$b\",/" >> "$OUT/parity.ndjson"
        done
        if [ "$name" != v1 ] && [ "$name" != v0v1 ] && [ "$name" != feat ]; then
          $cuda $(io $clip) $args -q --json -o "$OUT/cuda-$name.json" >/dev/null 2>&1
          $cpu $(io $clip) $args --threads $T -q --json -o "$OUT/cpu6-$name.json" >/dev/null 2>&1
          node bench/compare-logs.mjs "$OUT/cuda-$name.json" "$OUT/cpu6-$name.json" | sed "s/^{/{\"set\":\"$name\",\"backend\":\"libvmaf-cuda-vs-cpu\",/" >> "$OUT/parity.ndjson"
        fi
        rm -f "$OUT"/*.json
      done ;;
  esac
done
