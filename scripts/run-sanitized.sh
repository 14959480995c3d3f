#!/bin/sh
# Runs a command (node, mocha, the CLI) with the sanitizer build of the addon
# (npm run build:native:sanitize): docs/sanitizers.md.
#   scripts/run-sanitized.sh npx mocha --no-config --timeout 1200000 test/cpu-backend.test.mjs
# libasan must be the first library loaded (Node is not built with it), hence LD_PRELOAD.
# detect_leaks=0: V8 and Node keep memory until exit by design; leaks are not what we look for.
# halt_on_error/abort_on_error: a report ends the process, so no report goes unnoticed; UBSan
# aborts too (SIGABRT, not exit 1), so a test that expects a child's exit 1 cannot take a
# report for a clear error.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
addon="$root/build-sanitize/vmaf_native.node"
if [ ! -f "$addon" ]; then
  echo "run-sanitized: $addon is missing; run npm run build:native:sanitize first" >&2
  exit 2
fi
libasan=$(${CC:-gcc} -print-file-name=libasan.so)
libubsan=$(${CC:-gcc} -print-file-name=libubsan.so)
export VMAF_STREAM_NATIVE_ADDON="$addon"
export LD_PRELOAD="$libasan${LD_PRELOAD:+:$LD_PRELOAD}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1:abort_on_error=1:detect_odr_violation=0:allow_user_segv_handler=1:print_summary=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}"
: "$libubsan"
exec "$@"
