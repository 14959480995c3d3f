// Shared by the tests that score a pair on the gpu backend and the cpu backend and compare
// (gpu-float-adm, gpu-float-vif, gpu-float-extractors, gpu-extractors, gpu-adm-extractor,
// gpu-ssim, gpu-psnr-hvs): one scoring run collected, the bit-for-bit frame comparison, the
// nothing-ran-on-the-host check, the golden-parity tests with their per-key tallies, and y4m
// pairs written from generated samples.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, toArray } from 'rxjs';
import { score, scoreLadder } from '../../dist/index.js';
import { goldenClip } from './golden.mjs';

/** A fresh temporary folder, removed after the file's tests (call at a test file's top level). */
export function scratchDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** score()'s options with the warnings (and, when asked, the aggregates) collected into `into`. */
function collecting(options, into, aggregates) {
  into.warnings = [];
  if (aggregates) into.aggregates = {};
  return {
    threads: 2,
    ...options,
    onWarning: (m) => into.warnings.push(m),
    ...(aggregates ? { onAggregate: (name, metrics) => (into.aggregates[name] = metrics) } : {}),
  };
}

/**
 * One score() run, every frame collected: { frames, warnings }, and `aggregates` (name ->
 * metrics) when asked for. Two threads unless `options` says otherwise.
 */
export async function scoreRun(ref, dis, options, { aggregates = false } = {}) {
  const run = {};
  run.frames = await lastValueFrom(score(ref, dis, collecting(options, run, aggregates)).pipe(toArray()));
  return run;
}

/** One scoreLadder() run: { by: rendition name -> its frames, warnings }, and `aggregates` when asked for. */
export async function ladderRun(ref, renditions, options, { aggregates = false } = {}) {
  const run = {};
  const out = await lastValueFrom(scoreLadder(ref, renditions, collecting(options, run, aggregates)).pipe(toArray()));
  run.by = {};
  for (const { rendition, result } of out) (run.by[rendition] ??= []).push(result);
  return run;
}

/**
 * Every frame's every value identical (Object.is: NaN equals NaN, -0 differs from 0), same
 * keys in the same order; `field` the frames' map compared ('features' or 'scores'); `index`
 * also compares the frame indices.
 */
export function assertSameFrames(got, want, what, { field = 'features', index = false } = {}) {
  assert.equal(got.length, want.length, `${what}: ${got.length} frames, want ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    if (index) assert.equal(got[i].index, want[i].index, `${what}: frame ${i}`);
    assert.deepEqual(Object.keys(got[i][field]), Object.keys(want[i][field]), `${what}: frame ${i} keys`);
    for (const [k, v] of Object.entries(want[i][field])) {
      assert.ok(Object.is(got[i][field][k], v), `${what}: frame ${want[i].index} ${k}: gpu ${got[i][field][k]} cpu ${v}`);
    }
  }
}

/**
 * The pair scored on both backends (scoreRun with `options` and backend set): the gpu gives
 * `frames` frames, each identical to the cpu's (assertSameFrames), and nothing ran on the
 * host. Returns the cpu's frames.
 */
export async function assertGpuMatchesCpu(ref, dis, options, frames, what) {
  const g = await scoreRun(ref, dis, { ...options, backend: 'gpu' });
  const k = await scoreRun(ref, dis, { ...options, backend: 'cpu' });
  assert.equal(g.frames.length, frames, what);
  assertSameFrames(g.frames, k.frames, what);
  assertOnGpu(g.warnings, what);
  return k.frames;
}

/** The run's warnings that some extractor ran on the host. */
export const onHost = (warnings) => warnings.filter((w) => /host's cpu|run on the host/.test(w));

/** Nothing ran on the host: every extractor had its gpu kernel. */
export function assertOnGpu(warnings, what) {
  assert.deepEqual(onHost(warnings), [], `${what}: ${warnings.join('\n')}`);
}

/**
 * Golden parity, one test per case (call inside a describe()): the case's features scored on
 * the gpu and the cpu backend (no prediction), the gpu's frames equal to the cpu's bit for
 * bit, nothing on the host, every frame there (frameCnt, or the clip's when it has fewer or
 * frameCnt is not given), and each of `keys` in every frame equal to libvmaf 3.2.0's golden
 * value (Object.is). After the block, per key: how many were equal of how many, and the
 * largest difference. cases: { clip, features, keys, frameCnt? }; the test is named by the
 * frame count when there is one, by the features when not.
 */
export function goldenParity(cases) {
  const totals = {};
  after(() => console.log('      gpu vs libvmaf:', Object.entries(totals).map(([k, [e, t, d]]) => `${k} ${e}/${t} (max |diff| ${d})`).join(', ')));
  for (const { clip: name, features, keys, frameCnt } of cases) {
    it(`${name}: ${frameCnt === undefined ? features.join(', ') : `${frameCnt} frames`}`, async function () {
      const clip = goldenClip(name);
      const gold = clip.log('libvmaf-extra').frames;
      const options = { noPrediction: true, features, ...(frameCnt === undefined ? {} : { frameCnt }) };
      const gpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'gpu' });
      const cpu = await scoreRun(clip.ref, clip.dis, { ...options, backend: 'cpu' });
      assertSameFrames(gpu.frames, cpu.frames, name);
      assertOnGpu(gpu.warnings, name);
      assert.equal(gpu.frames.length, Math.min(frameCnt ?? Infinity, gold.length), `${name}: frames`);
      for (const f of gpu.frames) {
        for (const k of keys) {
          const want = gold[f.index].metrics[k];
          assert.equal(typeof want, 'number', `${name}: libvmaf's ${k}`);
          const tally = (totals[k] ??= [0, 0, 0]);
          tally[1]++;
          if (Object.is(f.features[k], want)) tally[0]++;
          tally[2] = Math.max(tally[2], Math.abs(f.features[k] - want));
          assert.ok(Object.is(f.features[k], want), `${name} frame ${f.index} ${k}: gpu ${f.features[k]}, libvmaf ${want}`);
        }
      }
    });
  }
}

/** The y4m C tag of `chroma` ('420', '422', '444') at `bitDepth`: 420jpeg, 422, 420p10, ... */
export function y4mTag(chroma, bitDepth) {
  return bitDepth === 8 ? (chroma === '420' ? '420jpeg' : chroma) : `${chroma}p${bitDepth}`;
}

/**
 * Writes `dir/name-0.y4m` (reference) and `dir/name-1.y4m` (distorted) and returns their
 * paths. `frames`: one [ref, dis] per frame, each the frame's samples (Uint8Array at 8 bits,
 * Uint16Array above) as one array of all planes or a list of plane arrays.
 */
export function writeFramePair(dir, name, { width, height, bitDepth, chroma = '420' }, frames) {
  const header = Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C${y4mTag(chroma, bitDepth)}\n`, 'latin1');
  const parts = [[header], [header]];
  for (const pair of frames) {
    for (const [k, samples] of pair.entries()) {
      parts[k].push(Buffer.from('FRAME\n', 'latin1'), ...[samples].flat().map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));
    }
  }
  return parts.map((p, k) => {
    const file = join(dir, `${name}-${k}.y4m`);
    writeFileSync(file, Buffer.concat(p));
    return file;
  });
}

/**
 * writeFramePair for tests that generate only luma: `frames` frames, each frame's ref and dis
 * samples (Uint8Array at 8 bits, Uint16Array above, zeroed) filled by fill(ref, dis, frame)
 * over the luma's width * height; the chroma planes (4:2:0, or 4:4:4 with chroma '444') mid-grey.
 */
export function writeLumaPair(dir, name, { width, height, bitDepth, chroma = '420' }, frames, fill) {
  const [cw, ch] = chroma === '444' ? [width, height] : [Math.ceil(width / 2), Math.ceil(height / 2)];
  const per = width * height + 2 * cw * ch;
  const pairs = [];
  for (let f = 0; f < frames; f++) {
    const ref = bitDepth > 8 ? new Uint16Array(per) : new Uint8Array(per);
    const dis = bitDepth > 8 ? new Uint16Array(per) : new Uint8Array(per);
    fill(ref, dis, f);
    ref.fill(1 << (bitDepth - 1), width * height);
    dis.fill(1 << (bitDepth - 1), width * height);
    pairs.push([ref, dis]);
  }
  return writeFramePair(dir, name, { width, height, bitDepth, chroma }, pairs);
}

/**
 * writeLumaPair from each frame's [ref, dis] luma values (any numbers: rounded to the nearest
 * sample and clamped to the depth's range).
 */
export function writeLumaValuesPair(dir, name, format, frames) {
  const max = 2 ** format.bitDepth - 1;
  const put = (samples, values) => {
    for (let i = 0; i < values.length; i++) samples[i] = Math.min(max, Math.max(0, Math.round(values[i])));
  };
  return writeLumaPair(dir, name, format, frames.length, (ref, dis, f) => {
    put(ref, frames[f][0]);
    put(dis, frames[f][1]);
  });
}
