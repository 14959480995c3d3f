import { existsSync, readdirSync } from 'node:fs';

/**
 * Whether this machine may have a hardware GPU at all. On Linux a hardware Vulkan driver
 * needs a DRM render node or NVIDIA's (or WSL's) device files; without them `auto` goes to
 * the cpu backend without loading Dawn (which takes a moment, and on a machine with only
 * lavapipe prints a few lines of its own on stderr). Elsewhere: ask Dawn.
 */
export function mayHaveHardwareGpu(): boolean {
  if (process.platform !== 'linux') return true;
  if (existsSync('/dev/nvidiactl') || existsSync('/dev/nvidia0') || existsSync('/dev/dxg')) return true;
  try {
    return readdirSync('/dev/dri').some((name) => name.startsWith('renderD') || name.startsWith('card'));
  } catch {
    return false;
  }
}
