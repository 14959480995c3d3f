#!/usr/bin/env bash
# Live transcoder QC: one ffmpeg encodes a source into a 3-rung ladder (x264, three sizes
# and bitrates); each rung is teed (ffmpeg's tee muxer) into an archive file and a named
# pipe, and vmaf-stream scores the three pipes against the source while they are being
# written: one NDJSON line per frame and rendition, rolling 1 s windows, an alert when a
# rung's VMAF stays under 60 for half a second (printed on stderr as it happens), and an
# HTML report at the end.
#
# Run: examples/live-transcoder-qc.sh [OUT_DIR]     (default: a new temporary directory)
#   SOURCE=clip.y4m examples/live-transcoder-qc.sh  (default: a 4 s lavfi testsrc2, 320x180)
# Writes OUT_DIR/{high,mid,low}.ts (the archived rungs), OUT_DIR/qc.ndjson, OUT_DIR/report.html.
# ffmpeg: $FFMPEG_PATH, else the one bundled by @ffmpeg-installer/ffmpeg.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
ffmpeg=${FFMPEG_PATH:-$root/node_modules/@ffmpeg-installer/linux-x64/ffmpeg}
out=${1:-$(mktemp -d -t vmaf-live-qc.XXXXXX)}
mkdir -p "$out"
work=$(mktemp -d -t vmaf-live-fifos.XXXXXX)
pids=()
cleanup() {
  # Stop what is still running (on an error or Ctrl-C), then remove the pipes.
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The source: a file given as SOURCE, else a synthetic clip (vmaf-stream reads it as the reference).
source=${SOURCE:-$work/source.y4m}
if [ -z "${SOURCE:-}" ]; then
  "$ffmpeg" -hide_banner -loglevel error -f lavfi -i testsrc2=size=320x180:rate=25:duration=4 -pix_fmt yuv420p "$source"
fi

# One named pipe per rung: what the transcoder writes, vmaf-stream reads as it comes.
rungs=(high mid low)
for rung in "${rungs[@]}"; do mkfifo "$work/$rung"; done

# The QC side starts first: it opens the pipes once the reference's header is read.
"$root/bin/vmaf-stream" -r "$source" \
  -d "name=high:path=$work/high" -d "name=mid:path=$work/mid" -d "name=low:path=$work/low" \
  -m version=vmaf_v0.6.1:name=vmaf -m version=vmaf_v0.6.1neg:name=vmaf_neg \
  --ndjson -o "$out/qc.ndjson" --window 1s --alert 'vmaf<60 for 0.5s' --report "$out/report.html" &
qc=$!
pids+=("$qc")

# The transcoder: one decode, three encodes; each rung goes to its archive and its pipe.
encodes=()
rung() { # NAME SIZE BITRATE
  encodes+=(-map 0:v -s "$2" -c:v libx264 -preset veryfast -b:v "$3" -maxrate "$3" -bufsize "$3" -g 25
    -f tee "[f=mpegts]$out/$1.ts|[f=mpegts]$work/$1")
}
rung high 320x180 400k
rung mid 240x136 120k
rung low 160x90 30k
"$ffmpeg" -hide_banner -loglevel error -nostdin -y -i "$source" "${encodes[@]}" &
transcoder=$!
pids+=("$transcoder")

# Whichever side fails first stops the other (cleanup): a pipe whose reader or writer is
# gone would leave the other side waiting for ever.
while kill -0 "$transcoder" 2>/dev/null && kill -0 "$qc" 2>/dev/null; do sleep 0.1; done
if ! kill -0 "$transcoder" 2>/dev/null; then
  wait "$transcoder" || { echo "live-transcoder-qc: the transcoder (ffmpeg) failed" >&2; exit 1; }
fi
wait "$qc" || { echo "live-transcoder-qc: vmaf-stream failed" >&2; exit 1; }
wait "$transcoder" || { echo "live-transcoder-qc: the transcoder (ffmpeg) failed" >&2; exit 1; }
pids=()

echo "archived rungs: $out/{high,mid,low}.ts"
echo "per-frame log:  $out/qc.ndjson ($(wc -l < "$out/qc.ndjson") lines)"
echo "report:         $out/report.html"
