// A few distinct frame pairs at any size, for the gpu suite's in-memory measurements: the
// clip's recipe (lib/clip.mjs: testsrc2 + temporal noise, reference x264 crf 14, distorted
// x264 at a low bitrate, here scaled with the pixel count from the clip's 1080p rate), made
// once by the bundled ffmpeg as two y4m files and cached in bench/.cache:
//   bench/.cache/ring-<W>x<H>-<N>f-r<RECIPE>/{ref,dis}.y4m
// The gpu suite's compute measurements upload these pairs to the GPU once and cycle through
// them; the in-memory extract measurement feeds them from host memory.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLIP_DEFAULTS } from './clip.mjs';

const RECIPE = 1;

/** The distorted bitrate for a frame size: the clip's, scaled by the pixel count. */
function disBitrate(width, height) {
  const base = Number.parseInt(CLIP_DEFAULTS.disBitrate, 10); // '1000k' -> 1000
  const scaled = Math.round((base * width * height) / (CLIP_DEFAULTS.width * CLIP_DEFAULTS.height));
  return `${Math.max(50, scaled)}k`;
}

export function ringDescription(ring) {
  return `${ring.width}x${ring.height} 8-bit, ${ring.frames} distinct pairs (testsrc2 + noise; ref x264 crf ${ring.refCrf}, dis x264 ${ring.disBitrate}b/s)`;
}

/** Makes (or finds) `frames` pairs at width x height; returns { width, height, frames, refY4m, disY4m, ... }. */
export function prepareRing({ ffmpegPath, cacheDir, width, height, frames = 8, log = () => {} }) {
  const p = { width, height, frames, rate: CLIP_DEFAULTS.rate, noise: CLIP_DEFAULTS.noise, refCrf: CLIP_DEFAULTS.refCrf, disBitrate: disBitrate(width, height), recipe: RECIPE };
  const dir = join(cacheDir, `ring-${width}x${height}-${frames}f-r${RECIPE}`);
  const ring = { ...p, dir, refY4m: join(dir, 'ref.y4m'), disY4m: join(dir, 'dis.y4m') };
  const marker = join(dir, 'ring.json');
  if (existsSync(marker)) {
    try {
      if (JSON.stringify(JSON.parse(readFileSync(marker, 'utf8'))) === JSON.stringify(p)) return ring;
    } catch {
      // remake it
    }
  }
  log(`making ${frames} ${width}x${height} frame pairs in ${dir} (once; cached)`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const ff = (...args) => {
    const r = spawnSync(ffmpegPath, ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', ...args], { stdio: ['ignore', 'inherit', 'pipe'] });
    if (r.status !== 0) throw new Error(`ffmpeg ${args.join(' ')} failed (${r.status ?? r.signal}): ${r.stderr?.toString().trim()}`);
  };
  const refMp4 = join(dir, 'ref.mp4');
  const disMp4 = join(dir, 'dis.mp4');
  const source = `testsrc2=size=${width}x${height}:rate=${p.rate},noise=alls=${p.noise}:allf=t,format=yuv420p`;
  ff('-f', 'lavfi', '-i', source, '-frames:v', String(frames), '-c:v', 'libx264', '-preset', 'veryfast', '-crf', String(p.refCrf), '-f', 'mp4', refMp4);
  ff('-i', refMp4, '-c:v', 'libx264', '-preset', 'veryfast', '-b:v', p.disBitrate, '-f', 'mp4', disMp4);
  for (const [mp4, y4m] of [[refMp4, ring.refY4m], [disMp4, ring.disY4m]]) {
    ff('-i', mp4, '-pix_fmt', 'yuv420p', '-f', 'yuv4mpegpipe', `${y4m}.part`);
    renameSync(`${y4m}.part`, y4m);
  }
  rmSync(refMp4);
  rmSync(disMp4);
  writeFileSync(marker, JSON.stringify(p));
  return ring;
}
