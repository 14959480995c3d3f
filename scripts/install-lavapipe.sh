#!/bin/sh
# Installs Mesa's lavapipe (a software Vulkan driver) so Dawn (npm `webgpu`) can open a
# WebGPU adapter on a machine with no GPU. Debian bookworm's own Mesa (22.3) is refused by
# Dawn, so Mesa comes from bookworm-backports (Mesa 25). Run as root on Debian bookworm;
# safe to run again (idempotent) and never asks questions.
set -eu

export DEBIAN_FRONTEND=noninteractive

if [ "$(id -u)" -ne 0 ]; then
  echo "install-lavapipe.sh: must run as root" >&2
  exit 1
fi

LIST=/etc/apt/sources.list.d/bookworm-backports.list
LINE='deb http://deb.debian.org/debian bookworm-backports main'
if ! grep -qsx "$LINE" "$LIST"; then
  echo "$LINE" > "$LIST"
fi

apt-get update -q
apt-get install -y -q --no-install-recommends -t bookworm-backports \
  mesa-vulkan-drivers libvulkan1

# The Vulkan loader finds lavapipe through its ICD file.
ls /usr/share/vulkan/icd.d/lvp_icd*.json

# Mesa/Dawn want a runtime directory; set one where the environment has none.
# (Processes that use the GPU backend should export XDG_RUNTIME_DIR too, e.g.
#   export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/xdg-runtime-$(id -u)}.)
XDG_DIR="${XDG_RUNTIME_DIR:-/tmp/xdg-runtime-$(id -u)}"
mkdir -p "$XDG_DIR"
chmod 700 "$XDG_DIR"
echo "lavapipe installed; export XDG_RUNTIME_DIR=$XDG_DIR before running the GPU backend"
