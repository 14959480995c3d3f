// The benchmark clip, made once per parameter set with the bundled ffmpeg and kept in
// bench/.cache: a 1080p 8-bit 4:2:0 synthetic source (testsrc2's moving patterns with
// temporal noise, so that nothing is trivially flat or static), encoded as
//   ref.mp4  x264 at high quality (crf 14): the reference
//   dis.mp4  ref.mp4 re-encoded by x264 at a low bitrate: the distorted
// and both decoded to y4m, so that the y4m and mp4 measurements score the same pixels.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

// Bump when the recipe changes: the cache key includes it.
const RECIPE = 1;

export const CLIP_DEFAULTS = { width: 1920, height: 1080, rate: 24, noise: 3, refCrf: 14, disBitrate: '1000k' };

export function clipDescription(clip) {
  return (
    `${clip.width}x${clip.height} 8-bit yuv420p, ${clip.frames} frames at ${clip.rate} fps; testsrc2 + temporal noise; ` +
    `reference x264 crf ${clip.refCrf}, distorted x264 ${clip.disBitrate}b/s`
  );
}

/** Makes (or finds in `cacheDir`) the clip with `frames` frames; returns its description and paths. */
export function prepareClip({ ffmpegPath, cacheDir, frames, log = () => {} }) {
  const p = { ...CLIP_DEFAULTS, frames, recipe: RECIPE };
  const dir = join(cacheDir, `clip-${p.width}x${p.height}-${frames}f-r${RECIPE}`);
  const files = {
    refMp4: join(dir, 'ref.mp4'),
    disMp4: join(dir, 'dis.mp4'),
    refY4m: join(dir, 'ref.y4m'),
    disY4m: join(dir, 'dis.y4m'),
  };
  const marker = join(dir, 'clip.json');
  const clip = { ...p, dir, ...files };
  if (existsSync(marker)) {
    try {
      if (JSON.stringify(JSON.parse(readFileSync(marker, 'utf8'))) === JSON.stringify(p)) return withSizes(clip);
    } catch {
      // remake it
    }
  }

  log(`making the ${frames}-frame clip in ${dir} (once; cached for later runs)`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ff = (...args) => {
    const r = spawnSync(ffmpegPath, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', ...args], { stdio: ['ignore', 'inherit', 'pipe'] });
    if (r.status !== 0) throw new Error(`ffmpeg ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr?.toString().trim()}`);
  };
  const tmp = (f) => `${f}.part`;
  const source = `testsrc2=size=${p.width}x${p.height}:rate=${p.rate},noise=alls=${p.noise}:allf=t,format=yuv420p`;
  ff('-f', 'lavfi', '-i', source, '-frames:v', String(frames), '-c:v', 'libx264', '-preset', 'veryfast', '-crf', String(p.refCrf), '-f', 'mp4', tmp(files.refMp4));
  renameSync(tmp(files.refMp4), files.refMp4);
  ff('-i', files.refMp4, '-c:v', 'libx264', '-preset', 'veryfast', '-b:v', p.disBitrate, '-f', 'mp4', tmp(files.disMp4));
  renameSync(tmp(files.disMp4), files.disMp4);
  for (const [mp4, y4m] of [[files.refMp4, files.refY4m], [files.disMp4, files.disY4m]]) {
    ff('-i', mp4, '-pix_fmt', 'yuv420p', '-f', 'yuv4mpegpipe', tmp(y4m));
    renameSync(tmp(y4m), y4m);
  }
  writeFileSync(marker, JSON.stringify(p));
  return withSizes(clip);
}

function withSizes(clip) {
  const mib = (f) => statSync(f).size / 2 ** 20;
  return { ...clip, sizesMiB: { refMp4: mib(clip.refMp4), disMp4: mib(clip.disMp4), refY4m: mib(clip.refY4m), disY4m: mib(clip.disY4m) } };
}
