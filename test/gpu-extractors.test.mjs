// Registered extractors with gpu kernels (src/kernels/gpu/gpu-extractor.ts): psnr (chroma
// included), float_psnr and float_moment run in the gpu backend's command buffers and give
// the cpu backend's values bit for bit, which are libvmaf 3.2.0's (the carried goldens):
// 8/10/12-bit, 4:2:0 and 4:4:4, odd sizes; alone (no core) and beside the core; on seeded
// random planes of random sizes, depths and subsamplings; in a ladder; with --subsample;
// APSNR. The run warns only about the extractors still on the host.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { goldenClip } from './helpers/golden.mjs';
import { assertSameFrames, ladderRun, scoreRun, scratchDir } from './helpers/gpu-vs-cpu.mjs';
import { chromaSize } from '../dist/decode/frame-layout.js';
import { loadNative } from '../dist/kernels/native.js';
import { EXTRACTORS } from '../dist/extractors/registry.js';
import { from, lastValueFrom, toArray } from 'rxjs';
import { createPlanBackend } from '../dist/kernels/create-backend.js';
import { planRun } from '../dist/extractors/plan.js';
import { parseFeatureArg } from '../dist/extractors/request.js';
import { decodedLumas } from './helpers/decoded-lumas.mjs';
import { GpuExtractorSet } from '../dist/kernels/gpu/gpu-extractors.js';

const tmp = scratchDir('vmaf-gpu-extractors-');

const run = (ref, dis, options) => scoreRun(ref, dis, { noPrediction: true, ...options }, { aggregates: true });
/** Every frame's every value and its index identical. */
const assertSame = (got, want, what) => assertSameFrames(got, want, what, { index: true });

const FEATURES = ['psnr', 'float_psnr', 'float_moment'];

describe('gpu extractors', function () {
  this.timeout(600000);

  it('the C++ side: statsCount for the extractors with a gpu part (0 for the others), finishExtractor checks its input', function () {
    const native = loadNative();
    const geometry = { width: 256, height: 192, bitDepth: 10, chromaWidth: 128, chromaHeight: 96 };
    const optionsOf = (def, given = {}) => Object.fromEntries(def.options.map((o) => [o.name, given[o.name] ?? o.default]));
    const counts = Object.fromEntries(
      EXTRACTORS.filter((x) => x.implementation.kind === 'native').map((x) => [x.name, native.extractorStatsCount(native.createExtractor(x.implementation.native, optionsOf(x), geometry))]),
    );
    for (const x of EXTRACTORS.filter((d) => d.implementation.kind === 'native')) {
      assert.equal(counts[x.name] > 0, x.implementation.gpu !== undefined, `${x.name}: ${counts[x.name]} accumulators`);
    }
    assert.deepEqual([counts.psnr, counts.float_psnr, counts.float_moment], [3, 1, 4]);
    const psnr = EXTRACTORS.find((x) => x.name === 'psnr');
    const h = native.createExtractor('psnr', optionsOf(psnr, { enable_mse: true }), geometry);
    assert.throws(() => native.finishExtractor(h, new BigUint64Array(2)), /BigUint64Array of 3/);
    // SSE 0 is capped at 6 * 10 + 12 dB; mse = sse / samples (128x96 chroma planes).
    const out = [...native.finishExtractor(h, new BigUint64Array([0n, 12288n, 24576n]))];
    assert.deepEqual([out[0], out[1], out[3], out[5]], [72, 0, 1, 2]);
    assert.ok(Math.abs(out[2] - 10 * Math.log10(1023 * 1023)) < 1e-9 && Math.abs(out[4] - 10 * Math.log10(1023 * 1023 / 2)) < 1e-9, String(out));
  });

  describe('golden parity: gpu == cpu == libvmaf 3.2.0, every frame', function () {
    const clips = ['src01_288x162_8bit', 'src01_288x162_10bit', 'mandel_213x121_odd', 'rgbtest_301x199_444_12bit', 'gradients_480x270_10bit', 'negated_256x144_2f', 'flat_and_static_320x240', 'hd_1920x1080_x264_2f'];
    const totals = {};
    after(() => {
      // The per-key tally (equal/total) for the report.
      console.log('      gpu vs libvmaf:', Object.entries(totals).map(([k, [e, t]]) => `${k} ${e}/${t}`).join(', '));
    });
    for (const name of clips) {
      it(name, async function () {
        const clip = goldenClip(name);
        const gold = clip.log('libvmaf-extra').frames;
        const gpu = await run(clip.ref, clip.dis, { backend: 'gpu', features: FEATURES });
        const cpu = await run(clip.ref, clip.dis, { backend: 'cpu', features: FEATURES });
        assertSame(gpu.frames, cpu.frames, name);
        let compared = 0;
        for (const f of gpu.frames) {
          const g = gold[f.index].metrics;
          for (const [k, v] of Object.entries(f.features)) {
            if (!(k in g)) continue; // odd 4:2:0 clips: libvmaf-extra leaves chroma out (see the fixtures' README)
            totals[k] ??= [0, 0];
            totals[k][1]++;
            if (Object.is(v, g[k])) totals[k][0]++;
            assert.ok(Object.is(v, g[k]), `${name} frame ${f.index} ${k}: gpu ${v}, libvmaf ${g[k]}`);
            compared++;
          }
        }
        assert.ok(compared >= gpu.frames.length * 5, `${name}: ${compared} values compared`);
        const chromaKeys = Object.keys(gpu.frames[0].features).filter((k) => k === 'psnr_cb' || k === 'psnr_cr');
        assert.equal(chromaKeys.length, 2, `${name}: chroma psnr computed`);
        // Only what has no gpu kernel runs on the host: nothing here.
        assert.deepEqual(gpu.warnings.filter((w) => /host's cpu/.test(w)), [], `${name}: ${gpu.warnings.join('\n')}`);
      });
    }
  });

  it('beside the core (a model): psnr options (mse, min_sse, no chroma), APSNR, and the warning names only host extractors', async function () {
    const clip = goldenClip('src01_160x90_8bit');
    const features = ['psnr=enable_mse=true:enable_apsnr=true', 'psnr=enable_chroma=false:min_sse=0.5', 'float_moment', 'float_ansnr', 'ciede'];
    const options = { features, noPrediction: false, models: ['version=vmaf_v0.6.1:name=vmaf'], frameCnt: 12 };
    const gpu = await run(clip.ref, clip.dis, { ...options, backend: 'gpu' });
    const cpu = await run(clip.ref, clip.dis, { ...options, backend: 'cpu' });
    assertSame(gpu.frames, cpu.frames, 'with the core');
    // psnr's options are no FEATURE_PARAMs: both instances log under psnr_y (as libvmaf's do).
    assert.ok('mse_cb' in gpu.frames[0].features, Object.keys(gpu.frames[0].features).join(' '));
    assert.ok('integer_vif_scale0' in gpu.frames[0].features);
    for (const [k, v] of Object.entries(cpu.aggregates)) {
      assert.ok(Object.keys(v).length > 0);
      for (const [m, x] of Object.entries(v)) assert.ok(Object.is(gpu.aggregates[k][m], x), `${k} ${m}: gpu ${gpu.aggregates[k]?.[m]} cpu ${x}`);
    }
    assert.deepEqual(Object.keys(gpu.aggregates[Object.keys(cpu.aggregates)[0]]).sort(), ['apsnr_cb', 'apsnr_cr', 'apsnr_y']);
    const host = gpu.warnings.filter((w) => /host's cpu/.test(w));
    assert.equal(host.length, 1, gpu.warnings.join('\n'));
    // ciede has no gpu kernel (glibc's pow/atan2/sin/cos/exp per pixel); float_ansnr has one now.
    assert.match(host[0], /ciede/);
    assert.doesNotMatch(host[0], /psnr|float_moment|float_ansnr/);
  });

  it('a ladder and --subsample give each rendition the cpu backend\'s values', async function () {
    const clip = goldenClip('src01_160x90_8bit');
    const features = ['psnr=enable_apsnr=true', 'float_psnr'];
    const ladder = (backend) =>
      ladderRun(clip.ref, [{ input: clip.dis, name: 'dis' }, { input: clip.ref, name: 'same' }], { backend, features, noPrediction: true, frameCnt: 10 }, { aggregates: true });
    const gpu = await ladder('gpu');
    const cpu = await ladder('cpu');
    for (const name of ['dis', 'same']) assertSame(gpu.by[name], cpu.by[name], `ladder ${name}`);
    assert.deepEqual(gpu.aggregates, cpu.aggregates);
    assert.equal(gpu.by.same[0].features.psnr_y, 60, 'identical input: psnr capped at 6 * 8 + 12');

    const sub = { features, frameCnt: 20, subsample: 3 };
    const g = await run(clip.ref, clip.dis, { ...sub, backend: 'gpu' });
    const c = await run(clip.ref, clip.dis, { ...sub, backend: 'cpu' });
    assertSame(g.frames, c.frames, 'subsample');
    assert.deepEqual(g.frames.map((f) => f.index), [0, 3, 6, 9, 12, 15, 18]);
  });

  it('a gpu run of only extractors whose kernels refuse the input (16-bit float_psnr) computes them on the host, with no core', async function () {
    const width = 64;
    const height = 40;
    const samples = new Uint16Array(width * height * 3);
    const parts = [Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C444p16\n`, 'latin1')];
    for (let f = 0; f < 2; f++) {
      for (let i = 0; i < samples.length; i++) samples[i] = (i * 40503 + f * 977) & 0xffff;
      parts.push(Buffer.from('FRAME\n', 'latin1'), Buffer.from(samples.slice().buffer));
    }
    const ref = join(tmp, 'wide-ref.y4m');
    writeFileSync(ref, Buffer.concat(parts));
    for (let i = 0; i < samples.length; i++) samples[i] ^= i % 7;
    const dis = join(tmp, 'wide-dis.y4m');
    writeFileSync(dis, Buffer.concat([parts[0], Buffer.from('FRAME\n', 'latin1'), Buffer.from(samples.buffer), Buffer.from('FRAME\n', 'latin1'), Buffer.from(samples.buffer)]));
    const g = await run(ref, dis, { features: ['float_psnr'], backend: 'gpu' });
    const c = await run(ref, dis, { features: ['float_psnr'], backend: 'cpu' });
    assertSame(g.frames, c.frames, '16-bit float_psnr');
    assert.deepEqual(Object.keys(g.frames[0].features), ['float_psnr']);
    assert.ok(g.warnings.some((w) => /float_psnr runs on the host's cpu/.test(w)), g.warnings.join('\n'));
  });

  it('randomized: seeded random planes of random sizes, depths and subsamplings, gpu == cpu exactly', async function () {
    let seed = 20261124;
    const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
    const cases = 12;
    for (let c = 0; c < cases; c++) {
      // VMAF's smallest frames are 33x33 (the run refuses smaller ones).
      const width = int(33, 140);
      const height = int(33, 90);
      const bitDepth = [8, 10, 12, 16][c % 4]; // every depth, twice or more
      const chroma = ['420', '422', '444'][int(0, 2)];
      const frames = int(1, 3);
      const files = ['ref', 'dis'].map((which, d) => {
        const cs = chromaSize({ width, height, chroma });
        const per = width * height + 2 * cs.width * cs.height;
        const max = 2 ** bitDepth - 1;
        const tag = bitDepth === 8 ? (chroma === '420' ? '420jpeg' : chroma) : `${chroma}p${bitDepth}`;
        const parts = [Buffer.from(`YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 C${tag}\n`, 'latin1')];
        for (let f = 0; f < frames; f++) {
          const samples = bitDepth > 8 ? new Uint16Array(per) : new Uint8Array(per);
          // The distorted: the reference plus small noise, some runs of extremes, so both small and huge errors occur.
          for (let i = 0; i < per; i++) samples[i] = d === 0 || rand() < 0.1 ? int(0, max) : Math.min(max, Math.max(0, ((i * 2654435761) >>> 0) % (max + 1) + int(-3, 3)));
          if (d === 0) for (let i = 0; i < per; i++) samples[i] = ((i * 2654435761) >>> 0) % (max + 1);
          parts.push(Buffer.from('FRAME\n', 'latin1'), Buffer.from(samples.buffer));
        }
        const file = join(tmp, `rand${c}-${which}.y4m`);
        writeFileSync(file, Buffer.concat(parts));
        return file;
      });
      const features = ['psnr=enable_mse=true', 'float_psnr', 'float_moment'];
      const what = `case ${c}: ${width}x${height} ${bitDepth}-bit ${chroma}`;
      const g = await run(files[0], files[1], { features, backend: 'gpu' });
      const k = await run(files[0], files[1], { features, backend: 'cpu' });
      assert.equal(g.frames.length, frames, what);
      assertSame(g.frames, k.frames, what);
      // 16-bit float extractors stay on the host (their float squares round): the warning says so.
      if (bitDepth === 16) assert.ok(g.warnings.some((w) => /float_psnr, float_moment run on the host/.test(w)), `${what}: ${g.warnings.join('\n')}`);
      else assert.ok(!g.warnings.some((w) => /host's cpu/.test(w)), `${what}: ${g.warnings.join('\n')}`);
    }
  });

  it("prepare(): the extractors' set compiles for the reference's format before any frame; a stream of that format takes it, one of another format makes its own; close() releases a set never taken", async function () {
    const plan = planRun(['float_psnr', 'float_moment'].map(parseFeatureArg));
    const pairsOf = async (name) => {
      const clip = goldenClip(name);
      const read = async (path) => (await decodedLumas(path)).map((f, index) => ({ index, format: f.format, luma: f.luma, release() {} }));
      const [ref, dis] = [await read(clip.ref), await read(clip.dis)];
      return { format: ref[0].format, groups: ref.map((r, i) => ({ index: i, ref: r, dis: [dis[i]] })) };
    };
    const values = (groups) => groups.map((g) => g.renditions[0].features);
    const extract = (backend, groups) => lastValueFrom(backend.extractMany(from(groups)).pipe(toArray())).then(values);
    const a = await pairsOf('src01_288x162_8bit');
    const b = await pairsOf('mandel_213x121_odd');
    const cpu = await createPlanBackend(plan, 'cpu', { threads: 1 });
    const want = { a: await extract(cpu, a.groups), b: await extract(cpu, b.groups) };
    await cpu.close();
    const warnings = [];
    // The sets whose kernels were compiled, in order.
    const compiled = new Set();
    const compile = GpuExtractorSet.prototype.compile;
    GpuExtractorSet.prototype.compile = function (...args) {
      compiled.add(this);
      return compile.apply(this, args);
    };
    const gpu = await createPlanBackend(plan, 'gpu', { threads: 1, onWarning: (w) => warnings.push(w) });
    try {
      gpu.prepare(a.format);
      assert.equal(compiled.size, 1, 'compiling at prepare()');
      assert.deepEqual(await extract(gpu, b.groups), want.b, 'a stream of another format');
      assert.equal(compiled.size, 2, 'its own set');
      assert.deepEqual(await extract(gpu, a.groups), want.a, 'a stream of the prepared format');
      assert.equal(compiled.size, 2, 'the prepared set');
      assert.deepEqual(await extract(gpu, a.groups), want.a, 'a second stream of that format');
      assert.equal(compiled.size, 3, 'a set of its own: the prepared one was taken');
    } finally {
      GpuExtractorSet.prototype.compile = compile;
      await gpu.close();
    }
    assert.deepEqual(warnings.filter((w) => /host's cpu/.test(w)), []);
    // Prepared and closed with no frame: the set (still compiling, or compiled) is released.
    const idle = await createPlanBackend(plan, 'gpu', { threads: 1 });
    idle.prepare(b.format);
    await idle.close();
  });
});

