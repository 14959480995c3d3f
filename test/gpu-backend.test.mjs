// The gpu backend (WebGPU; lavapipe on a CPU-only machine: scripts/install-lavapipe.sh):
// the motion kernel against the native motionSad, the staging rings' fences, and the whole
// backend against the cpu backend, feature for feature and bit for bit, on golden clips
// (8-bit 4:2:0, 12-bit 4:4:4 through ffmpeg), with --subsample, with the host's buffers
// overwritten as soon as they are released, run after run; a device lost mid-stream; the
// CLI's --backend gpu. XDG_RUNTIME_DIR must be set for Mesa (any writable folder).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Observable, from, lastValueFrom, toArray, firstValueFrom, tap, timeout as rxTimeout } from 'rxjs';
import { GpuBackend } from '../dist/kernels/gpu/gpu-backend.js';
import { MotionKernel } from '../dist/kernels/gpu/motion/motion-kernel.js';
import { VifKernel } from '../dist/kernels/gpu/vif/vif-kernel.js';
import { AdmKernel } from '../dist/kernels/gpu/adm/adm-kernel.js';
import { openGpuDevice, hasHardwareAdapter } from '../dist/kernels/gpu/device.js';
import { readI64 } from '../dist/kernels/gpu/wgsl.js';
import { UploadRing, UploadSlot, ReadbackRing, ReferenceRing, StagingPool } from '../dist/pool/staging-ring.js';
import { CpuBackend } from '../dist/kernels/cpu-backend.js';
import { createBackend } from '../dist/kernels/create-backend.js';
import { loadNative } from '../dist/kernels/native.js';
import { pairFrames } from '../dist/decode/pair-frames.js';
import { BackendError } from '../dist/errors.js';
import { goldenClip } from './helpers/golden.mjs';
import { decodedLumas } from './helpers/decoded-lumas.mjs';

const BIN = fileURLToPath(new URL('../bin/vmaf-stream', import.meta.url));
const CLIPS = [
  { name: 'src01_160x90_8bit' },
  { name: 'negated_256x144_2f' },
  { name: 'rgbtest_301x199_444_12bit' },
];

// ---- helpers ----------------------------------------------------------------------------

function makeRng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every frame of a clip, decoded once (luma copies, format), cached. */
const clipCache = new Map();
async function loadClip({ name }) {
  if (!clipCache.has(name)) {
    const clip = goldenClip(name);
    clipCache.set(name, { ref: await decodedLumas(clip.ref), dis: await decodedLumas(clip.dis) });
  }
  return clipCache.get(name);
}

/**
 * Pairs over a decoded clip. Each frame counts its releases in `releases`; `onRelease`
 * runs on each release (to scribble over the luma, say). subsample as --subsample.
 */
function pairsOf(clip, { subsample = 1, releases = new Map(), onRelease, copy = true } = {}) {
  const n = Math.min(clip.ref.length, clip.dis.length);
  const pairs = [];
  for (let i = 0; i < n; i++) {
    const mk = (f, tag) => {
      const frame = {
        index: i,
        format: f.format,
        luma: copy ? f.luma.slice() : f.luma,
        release() {
          releases.set(`${tag}${i}`, (releases.get(`${tag}${i}`) ?? 0) + 1);
          onRelease?.(frame);
        },
      };
      if (f.pts !== undefined) frame.pts = f.pts;
      return frame;
    };
    const pair = { index: i, ref: mk(clip.ref[i], 'r'), dis: mk(clip.dis[i], 'd') };
    if (subsample > 1) pair.scored = i % subsample === 0;
    pairs.push(pair);
  }
  return { pairs, releases, count: n };
}

function assertAllReleasedOnce(releases, count) {
  for (let i = 0; i < count; i++) {
    for (const tag of ['r', 'd']) assert.equal(releases.get(`${tag}${i}`), 1, `frame ${tag}${i} released ${releases.get(`${tag}${i}`) ?? 0} times`);
  }
}

function assertSameFeatures(got, want, what) {
  assert.equal(got.length, want.length, `${what}: ${got.length} frames, want ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    assert.equal(got[i].index, want[i].index, `${what}: frame ${i} index`);
    assert.deepEqual(Object.keys(got[i].features), Object.keys(want[i].features), `${what}: frame ${i} keys`);
    for (const [k, v] of Object.entries(want[i].features)) {
      // Object.is: bit for bit (NaN equals NaN, -0 differs from 0)
      assert.ok(Object.is(got[i].features[k], v), `${what}: frame ${want[i].index} ${k}: gpu ${got[i].features[k]}, cpu ${v}`);
    }
    assert.equal(got[i].refPts, want[i].refPts);
    assert.equal(got[i].disPts, want[i].disPts);
  }
}

const extractAll = (backend, pairs) => lastValueFrom(backend.extract(from(pairs)).pipe(toArray()));

/** A promise that rejects after ms (so a hang fails the test instead of the run). */
const within = (p, ms, what) =>
  Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no outcome in ${ms} ms (hang)`)), ms).unref())]);

// ---- tests ------------------------------------------------------------------------------

describe('gpu backend (WebGPU)', function () {
  let gpu; // a bare device for kernel and ring tests
  let backend; // one backend for most tests (kernels compile once per geometry)
  const cpu = new CpuBackend({ threads: 2 });
  const warnings = [];

  before(async function () {
    gpu = await openGpuDevice({ label: 'gpu-backend test' });
    backend = await GpuBackend.open({ onWarning: (m) => warnings.push(m), timing: true });
  });
  after(async function () {
    await backend?.close();
    gpu?.destroy();
  });

  describe('MotionKernel', function () {
    const native = loadNative();

    function upload(luma) {
      const bytes = new Uint8Array(luma.buffer, luma.byteOffset, luma.byteLength);
      const b = gpu.device.createBuffer({ size: Math.ceil(bytes.length / 4) * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, mappedAtCreation: true });
      new Uint8Array(b.getMappedRange()).set(bytes);
      b.unmap();
      return b;
    }

    async function gpuSad(prev, cur, width, height, bitDepth, offset = 8) {
      const k = await MotionKernel.create(gpu, { width, height, bitDepth });
      const pb = upload(prev);
      const cb = upload(cur);
      const stats = gpu.device.createBuffer({ size: 64, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
      try {
        // Garbage where the SAD goes: the kernel must clear its own words.
        gpu.device.queue.writeBuffer(stats, 0, new Uint32Array(16).fill(0xdeadbeef));
        const enc = gpu.device.createCommandEncoder();
        k.encode(enc, { ref: cb, dis: cb, prevRef: pb }, { buffer: stats, offset });
        gpu.device.queue.submit([enc.finish()]);
        const words = new Uint32Array(await gpu.read(stats));
        // Nothing but its own 8 bytes is written.
        for (let w = 0; w < 16; w++) if (w !== offset / 4 && w !== offset / 4 + 1) assert.equal(words[w], 0xdeadbeef, `word ${w} was written`);
        return BigInt.asUintN(64, readI64(words, offset / 4));
      } finally {
        k.destroy();
        pb.destroy();
        cb.destroy();
        stats.destroy();
      }
    }

    it('equals the native motionSad on random sizes, bit depths and contents (samples beyond the bit depth too)', async function () {
      const R = makeRng(Number(process.env.GPU_MOTION_SEED ?? 0x6d07));
      const cases = [
        [3, 3, 8], [4, 5, 16], [33, 33, 10], [257, 7, 8], [258, 9, 12], [513, 3, 16], [301, 199, 12], [160, 90, 8],
      ];
      for (let t = 0; t < 8; t++) cases.push([3 + Math.floor(R() * 400), 3 + Math.floor(R() * 100), [8, 10, 12, 16][t % 4]]);
      for (const [w, h, bd] of cases) {
        for (const mode of ['random', 'near', 'extreme']) {
          const A = bd === 8 ? Uint8Array : Uint16Array;
          // 'extreme': any u16 (the cpu backend is exact for them too), alternating 0 / max.
          const max = mode === 'extreme' && bd > 8 ? 65535 : (1 << bd) - 1;
          const prev = new A(w * h);
          const cur = new A(w * h);
          for (let i = 0; i < w * h; i++) {
            prev[i] = Math.floor(R() * (max + 1));
            cur[i] = mode === 'near' ? Math.max(0, Math.min(max, prev[i] + Math.round((R() - 0.5) * 16)))
              : mode === 'extreme' ? (R() < 0.5 ? 0 : max) : Math.floor(R() * (max + 1));
          }
          const want = native.motionSad(prev, cur, w, h, bd);
          const got = await gpuSad(prev, cur, w, h, bd, 8 * (1 + Math.floor(R() * 6)));
          assert.equal(got, want, `${w}x${h} ${bd}-bit ${mode}`);
        }
      }
    });

    it('gives 0 for identical frames, and writes 0 without a previous frame', async function () {
      const w = 64, h = 40;
      const a = new Uint16Array(w * h).map((_, i) => (i * 37) & 1023);
      assert.equal(await gpuSad(a, a, w, h, 10), 0n);
      const k = await MotionKernel.create(gpu, { width: w, height: h, bitDepth: 10 });
      const buf = upload(a);
      const stats = gpu.device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
      gpu.device.queue.writeBuffer(stats, 0, new Uint32Array(4).fill(7));
      const enc = gpu.device.createCommandEncoder();
      k.encode(enc, { ref: buf, dis: buf }, { buffer: stats, offset: 8 });
      gpu.device.queue.submit([enc.finish()]);
      assert.deepEqual([...new Uint32Array(await gpu.read(stats))], [7, 7, 0, 0]);
      k.destroy();
      buf.destroy();
      stats.destroy();
    });
  });

  describe('staging rings', function () {
    it('reuses an upload slot only after the GPU has consumed it, FIFO, and carries the bytes', async function () {
      const ring = new UploadRing({ gpu, slots: 2, bytes: 10, label: 'test' });
      const dst = gpu.device.createBuffer({ size: 48, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
      try {
        assert.equal(ring.bytes, 12);
        const a = await ring.acquire();
        const b = await ring.acquire();
        assert.equal(ring.available, 0);
        let third;
        const pending = ring.acquire().then((s) => (third = s));
        const one = (bytes) => [{ offset: 0, bytes: bytes.byteLength, planes: [{ bytes, offset: 0 }] }];
        await a.writeRegionsAsync(one(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])), undefined);
        await b.writeRegionsAsync(one(new Uint8Array([11, 12, 13])), undefined);
        const enc = gpu.device.createCommandEncoder();
        a.encodeRegionCopy(enc, 0, 12, dst);
        await new Promise((r) => setImmediate(r));
        assert.equal(third, undefined, 'a third slot before any was submitted');
        gpu.device.queue.submit([enc.finish()]);
        const fenceA = ring.submitted(a);
        await fenceA;
        await pending;
        assert.equal(third, a, 'the slot freed first comes back first');
        assert.equal(a.buffer.mapState, 'mapped');
        // b was written but never submitted: it comes back through its own fence, after a
        // (releasing it before a's fence would race the two fences, which need not be FIFO).
        ring.release(b);
        assert.equal(await ring.acquire(), b);
        assert.equal(b.buffer.mapState, 'mapped');
        const words = new Uint8Array(await gpu.read(dst, 12));
        // The pad after the 10 bytes is zeroed.
        assert.deepEqual([...words], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 0, 0]);
      } finally {
        ring.destroy();
        dst.destroy();
      }
    });

    it("writes a group's pictures into one slot (regions, each plane at its offset, pads zeroed) and copies each out", async function () {
      const ring = new UploadRing({ gpu, slots: 2, bytes: 64, label: 'test' });
      const dst = [0, 1, 2].map(() => gpu.device.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC }));
      try {
        // Junk in both slots first (a mapping shows the buffer's contents): only the regions
        // written next are zeroed around their planes.
        for (const junk of [await ring.acquire(), await ring.acquire()]) {
          await junk.writeRegionsAsync([{ offset: 0, bytes: 64, planes: [{ bytes: new Uint8Array(64).fill(0xee), offset: 0 }] }], undefined);
          await ring.submitted(junk);
        }
        const slot = await ring.acquire();
        // Region 0: one plane of 6 bytes (pad 2); region 2 (at 32): two planes (gap and tail); region 1 left out.
        await slot.writeRegionsAsync([
          { offset: 0, bytes: 6, planes: [{ bytes: new Uint8Array([1, 2, 3, 4, 5, 6]), offset: 0 }] },
          { offset: 32, bytes: 14, planes: [{ bytes: new Uint8Array([7, 8, 9]), offset: 0 }, { bytes: new Uint8Array([10, 11]), offset: 8 }] },
        ], undefined);
        assert.equal(slot.buffer.mapState, 'unmapped');
        const enc = gpu.device.createCommandEncoder();
        slot.encodeRegionCopy(enc, 0, 8, dst[0]);
        slot.encodeRegionCopy(enc, 32, 16, dst[2]);
        assert.throws(() => slot.encodeRegionCopy(enc, 48, 16, dst[1]), (e) => e.code === 'E_GPU');
        gpu.device.queue.submit([enc.finish()]);
        await ring.submitted(slot);
        assert.deepEqual([...new Uint8Array(await gpu.read(dst[0], 8))], [1, 2, 3, 4, 5, 6, 0, 0]);
        assert.deepEqual([...new Uint8Array(await gpu.read(dst[2], 16))], [7, 8, 9, 0, 0, 0, 0, 0, 10, 11, 0, 0, 0, 0, 0, 0]);
        const other = await ring.acquire();
        await assert.rejects(other.writeRegionsAsync([{ offset: 0, bytes: 4, planes: [{ bytes: new Uint8Array(6), offset: 0 }] }], undefined), (e) => e.code === 'E_GPU' && /overrun/.test(e.message));
        ring.release(other);
      } finally {
        ring.destroy();
        for (const d of dst) d.destroy();
      }
    });

    it('copies large pictures off the main thread: one copyBytes call for a slot\'s pairs, or one per plane', async function () {
      const native = loadNative();
      assert.equal(native.copyBytesPairs, true);
      const big = 300 * 1024; // over ASYNC_WRITE_MIN_BYTES
      const stride = big + 4;
      const ring = new UploadRing({ gpu, slots: 2, bytes: 2 * stride, label: 'test' });
      const dst = gpu.device.createBuffer({ size: 2 * stride, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
      try {
        const a = new Uint8Array(big).map((_, i) => (i * 7) & 255);
        const b = new Uint8Array(big - 2).map((_, i) => (i * 13 + 1) & 255);
        const want = new Uint8Array(2 * stride);
        want.set(a, 0);
        want.set(b, stride);
        for (const mode of ['pairs', 'single']) {
          let calls = 0;
          const copy = (d, s) => (calls++, native.copyBytes(d, s));
          const copyPairs = (pairs) => (calls++, native.copyBytes(...pairs));
          const slot = await ring.acquire();
          await slot.writeRegionsAsync([
            { offset: 0, bytes: big, planes: [{ bytes: a, offset: 0 }] },
            { offset: stride, bytes: big, planes: [{ bytes: b, offset: 0 }] },
          ], copy, mode === 'pairs' ? copyPairs : undefined);
          assert.equal(calls, mode === 'pairs' ? 1 : 2, mode);
          const enc = gpu.device.createCommandEncoder();
          slot.encodeRegionCopy(enc, 0, stride + big, dst);
          gpu.device.queue.submit([enc.finish()]);
          await ring.submitted(slot);
          assert.deepEqual(new Uint8Array(await gpu.read(dst, stride + big)), want.subarray(0, stride + big), mode);
        }
        await assert.rejects(async () => native.copyBytes(new Uint8Array(4), new Uint8Array(4), new Uint8Array(4)), TypeError);
        await assert.rejects(async () => native.copyBytes(new Uint8Array(4), new Uint8Array(4), new Uint8Array(2), new Uint8Array(4)), /dst only 2/);
      } finally {
        ring.destroy();
        dst.destroy();
      }
    });

    it("places a group's pictures in one upload slot, or in several where one slot would pass the buffer limit", function () {
      const one = new StagingPool({ gpu, depth: 2, renditions: 3, lumaBytes: 10, statsBytes: 64 });
      try {
        assert.deepEqual([one.pictureStride, one.picturesPerSlot, one.slotsPerGroup, one.upload.slots.length, one.upload.bytes], [12, 4, 1, 2, 48]);
        assert.deepEqual([0, 1, 3].map((j) => one.uploadPlace(j)), [{ slot: 0, offset: 0 }, { slot: 0, offset: 12 }, { slot: 0, offset: 36 }]);
      } finally {
        one.destroy();
      }
      const split = new StagingPool({ gpu, depth: 2, renditions: 3, lumaBytes: 10, statsBytes: 64, maxUploadBytes: 30 });
      try {
        assert.deepEqual([split.picturesPerSlot, split.slotsPerGroup, split.upload.slots.length, split.upload.bytes], [2, 2, 4, 24]);
        assert.deepEqual([1, 2, 3].map((j) => split.uploadPlace(j)), [{ slot: 0, offset: 12 }, { slot: 1, offset: 0 }, { slot: 1, offset: 12 }]);
      } finally {
        split.destroy();
      }
      // 9 pictures, at most 4 a slot: 3 slots of 3 (not 4, 4 and 1).
      const even = new StagingPool({ gpu, depth: 2, renditions: 8, lumaBytes: 12, statsBytes: 64, maxUploadBytes: 48 });
      try {
        assert.deepEqual([even.picturesPerSlot, even.slotsPerGroup, even.upload.slots.length, even.upload.bytes], [3, 3, 6, 36]);
        assert.deepEqual(even.uploadPlace(8), { slot: 2, offset: 24 });
      } finally {
        even.destroy();
      }
    });

    it('reads back without holding up the next submit, and frees the slot after the read', async function () {
      const rb = new ReadbackRing({ gpu, slots: 2, bytes: 16, label: 'test' });
      const src = gpu.device.createBuffer({ size: 16, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
      try {
        const reads = [];
        for (let frame = 0; frame < 6; frame++) {
          const slot = await rb.acquire(); // waits only when both slots are being read
          gpu.device.queue.writeBuffer(src, 0, new Uint32Array([frame, frame * 2, frame * 3, 0xffffffff]));
          const enc = gpu.device.createCommandEncoder();
          slot.encodeCopy(enc, src, 0, 16);
          gpu.device.queue.submit([enc.finish()]);
          reads.push(rb.read(slot)); // not awaited here
        }
        const got = (await Promise.all(reads)).map((b) => [...new Uint32Array(b)]);
        assert.deepEqual(got, [0, 1, 2, 3, 4, 5].map((f) => [f, f * 2, f * 3, 0xffffffff]));
        assert.equal(rb.available, 2);
      } finally {
        rb.destroy();
        src.destroy();
      }
    });

    it('keeps the previous reference resident: ReferenceRing hands out prev = last frame\'s buffer', function () {
      const ring = new ReferenceRing(gpu, { slots: 3, bytes: 16, label: 'test' });
      try {
        const f0 = ring.advance();
        assert.equal(f0.prevRef, undefined);
        const f1 = ring.advance();
        const f2 = ring.advance();
        const f3 = ring.advance();
        assert.equal(f1.prevRef, f0.ref);
        assert.equal(f2.prevRef, f1.ref);
        assert.equal(f3.prevRef, f2.ref);
        // And the one before (the five-frame window's SAD reads it).
        assert.equal(f1.prevRef2, undefined);
        assert.equal(f2.prevRef2, f0.ref);
        assert.equal(f3.prevRef2, f1.ref);
        assert.notEqual(f3.ref, f3.prevRef);
        assert.notEqual(f3.ref, f3.prevRef2);
        assert.equal(f3.ref, f0.ref); // a ring of 3
        ring.reset();
        const g0 = ring.advance();
        assert.equal(g0.prevRef, undefined);
        assert.equal(g0.prevRef2, undefined);
        assert.equal(ring.advance().prevRef2, undefined);
      } finally {
        ring.destroy();
      }
    });

    it('turns a fence that never resolves into E_GPU, and a destroyed ring into E_GPU for its waiters', async function () {
      await assert.rejects(gpu.guard(new Promise(() => {}), 'test fence', 50), (e) => e instanceof BackendError && e.code === 'E_GPU' && /no answer/.test(e.message));
      const pool = new StagingPool({ gpu, depth: 2, lumaBytes: 100, statsBytes: 456 });
      await pool.upload.acquire();
      await pool.upload.acquire();
      const waiting = pool.upload.acquire();
      pool.destroy();
      await assert.rejects(waiting, (e) => e.code === 'E_GPU');
    });
  });

  describe('features', function () {
    for (const spec of CLIPS) {
      it(`${spec.name}: equal to the cpu backend bit for bit, every frame released once`, async function () {
        const clip = await loadClip(spec);
        const want = await extractAll(cpu, pairsOf(clip).pairs);
        const { pairs, releases, count } = pairsOf(clip);
        const got = await extractAll(backend, pairs);
        assertSameFeatures(got, want, spec.name);
        assertAllReleasedOnce(releases, count);
      });
    }

    it("a ladder's pictures split over several upload slots (maxUploadBytes) give the same bits as one slot a group", async function () {
      const clip = await loadClip(CLIPS[0]);
      const n = 5;
      const picture = clip.ref[0].luma.byteLength;
      // Three renditions (the distorted, the reference itself, the distorted again, which ends after 3 frames).
      const groupsOf = () => {
        const { pairs, releases } = pairsOf(clip);
        const extra = pairsOf(clip).pairs;
        const more = pairsOf(clip).pairs;
        const groups = pairs.slice(0, n).map((p, i) => ({ index: i, ref: p.ref, dis: [p.dis, extra[i].ref, i < 3 ? more[i].dis : undefined] }));
        return { groups, releases };
      };
      const write = UploadSlot.prototype.writeRegionsAsync;
      let writes = 0;
      const run = async (maxUploadBytes) => {
        const b = await GpuBackend.open({ maxUploadBytes, onWarning: () => {} });
        writes = 0;
        UploadSlot.prototype.writeRegionsAsync = function (...args) {
          writes++;
          return write.apply(this, args);
        };
        try {
          const { groups } = groupsOf();
          return await lastValueFrom(b.extractMany(from(groups)).pipe(toArray()));
        } finally {
          UploadSlot.prototype.writeRegionsAsync = write;
          await b.close();
        }
      };
      const one = await run(undefined);
      assert.equal(one.length, n);
      assert.equal(writes, n, 'one slot a group');
      // A picture a slot: 4 slots a group while the third rendition lasts, then 3; two a slot: 2 slots a group.
      for (const [max, want] of [[picture, 3 * 4 + 2 * 3], [2 * picture + 4, n * 2]]) {
        assert.deepEqual(await run(max), one, `maxUploadBytes ${max}`);
        assert.equal(writes, want, `slot writes with maxUploadBytes ${max}`);
      }
      // The renditions are scored as themselves: the reference against itself gives VIF 1.
      assert.equal(one[0].renditions[1].features.integer_vif_scale0, 1);
      assert.equal(one[4].renditions[2], undefined);
    });

    it('--subsample: unscored pairs feed motion only and are not emitted, as on the cpu backend', async function () {
      const clip = await loadClip(CLIPS[0]);
      for (const subsample of [2, 5]) {
        const want = await extractAll(cpu, pairsOf(clip, { subsample }).pairs);
        const { pairs, releases, count } = pairsOf(clip, { subsample });
        const got = await extractAll(backend, pairs);
        assert.deepEqual(got.map((f) => f.index), want.map((f) => f.index));
        assertSameFeatures(got, want, `subsample ${subsample}`);
        assertAllReleasedOnce(releases, count);
      }
    });

    it('reads the staging copy: overwriting the host buffers as soon as they are released changes nothing', async function () {
      const spec = CLIPS[0]; // enough frames for several to be in flight at once
      const clip = await loadClip(spec);
      const want = await extractAll(cpu, pairsOf(clip).pairs);

      // 1. Each frame's luma is scribbled over the moment the backend releases it.
      const R = makeRng(99);
      const released = [];
      const scribble = (frame) => {
        released.push(frame.index);
        for (let i = 0; i < frame.luma.length; i++) frame.luma[i] = Math.floor(R() * 256);
      };
      const got1 = await extractAll(backend, pairsOf(clip, { onRelease: scribble }).pairs);
      assertSameFeatures(got1, want, 'scribbled on release');

      // 2. One host buffer per input for the whole clip: frame N+1 is written into it as
      //    soon as frame N is released, while frame N is still on its way through the GPU.
      const n = Math.min(clip.ref.length, clip.dis.length);
      let emittedBeforeResult = 0;
      let results = 0;
      const single = new Observable((sub) => {
        const { format } = clip.ref[0];
        const refBuf = clip.ref[0].luma.slice();
        const disBuf = clip.dis[0].luma.slice();
        let i = 0;
        let stopped = false;
        const emit = () => {
          if (stopped) return;
          if (i === n) return sub.complete();
          refBuf.set(clip.ref[i].luma);
          disBuf.set(clip.dis[i].luma);
          // Frames i-2 and earlier still without a result: frame i overwrites the host
          // buffers while they are in flight.
          if (i - results >= 2) emittedBeforeResult++;
          let out = 2;
          const done = () => {
            if (--out === 0) setImmediate(emit);
          };
          const index = i++;
          sub.next({ index, ref: { index, format, luma: refBuf, release: done }, dis: { index, format, luma: disBuf, release: done } });
        };
        emit();
        return () => { stopped = true; };
      });
      const got2 = await lastValueFrom(backend.extract(single).pipe(tap(() => results++), toArray()));
      assertSameFeatures(got2.map((f) => ({ ...f, refPts: undefined, disPts: undefined })), want.map((f) => ({ ...f, refPts: undefined, disPts: undefined })), 'one host buffer');
      assert.ok(emittedBeforeResult > 0, 'frames were overwritten while earlier ones were in flight');
    });

    it('prepare(format) starts compiling the kernels before any frame, once; the stream then uses them, bit for bit as the cpu backend', async function () {
      const clip = await loadClip(CLIPS[1]);
      const calls = { vif: 0, adm: 0, motion: 0 };
      const kernels = { vif: VifKernel, adm: AdmKernel, motion: MotionKernel };
      const counted = (part) => (gpu, g) => {
        calls[part]++;
        return kernels[part].create(gpu, g);
      };
      const b = await GpuBackend.open({ kernelFactories: { vif: counted('vif'), adm: counted('adm'), motion: counted('motion') } });
      try {
        b.prepare(clip.ref[0].format);
        assert.deepEqual(calls, { vif: 1, adm: 1, motion: 1 });
        const { pairs, releases, count } = pairsOf(clip);
        const got = await extractAll(b, pairs);
        assert.deepEqual(calls, { vif: 1, adm: 1, motion: 1 });
        assertSameFeatures(got, await extractAll(cpu, pairsOf(clip).pairs), 'prepared');
        assertAllReleasedOnce(releases, count);
      } finally {
        await b.close();
      }
    });

    it('is deterministic: the same bits run after run and whatever the depth', async function () {
      const clip = await loadClip(CLIPS[0]);
      const a = await extractAll(backend, pairsOf(clip).pairs);
      const b = await extractAll(backend, pairsOf(clip).pairs);
      assertSameFeatures(b, a, 'second run');
      const deep = await GpuBackend.open({ depth: 5 });
      const shallow = await GpuBackend.open({ depth: 2 });
      try {
        assertSameFeatures(await extractAll(deep, pairsOf(clip).pairs), a, 'depth 5');
        assertSameFeatures(await extractAll(shallow, pairsOf(clip).pairs), a, 'depth 2');
      } finally {
        await deep.close();
        await shallow.close();
      }
    });

    it('queued groups share a submit and a readback; a group that arrives alone is submitted alone, without waiting for more', async function () {
      const clip = await loadClip(CLIPS[0]);
      const want = await extractAll(cpu, pairsOf(clip).pairs);
      const b = await GpuBackend.open({ depth: 4, timing: true });
      try {
        // All the input at once: the groups staged together are submitted together.
        const queued = pairsOf(clip);
        assertSameFeatures(await extractAll(b, queued.pairs), want, 'queued');
        assertAllReleasedOnce(queued.releases, queued.count);
        const first = b.submits();
        assert.equal(first.groups, queued.count);
        assert.ok(first.submits < first.groups, `${first.submits} submits for ${first.groups} groups`);
        // One pair at a time, the next only once the previous one has been submitted (the
        // features of a frame wait for the next frame's motion): each group goes alone, and
        // a batch that waited to fill would hang here.
        const slow = pairsOf(clip);
        const got = [];
        await within(
          new Promise((resolve, reject) => {
            let next = 0;
            const source = new Observable((sub) => {
              const feed = () => {
                if (next === slow.pairs.length) return sub.complete();
                sub.next(slow.pairs[next++]);
                const wait = () => (b.submits().groups - first.groups >= next ? feed() : setTimeout(wait, 1));
                wait();
              };
              feed();
            });
            b.extract(source).subscribe({ next: (f) => got.push(f), error: reject, complete: resolve });
          }),
          120000,
          'one pair at a time',
        );
        assertSameFeatures(got, want, 'one at a time');
        assertAllReleasedOnce(slow.releases, slow.count);
        const second = b.submits();
        assert.equal(second.groups - first.groups, slow.count);
        assert.equal(second.submits - first.submits, slow.count);
      } finally {
        await b.close();
      }
      // batch: 1 submits every group on its own, queued or not; a batch over the depth is refused.
      const single = await GpuBackend.open({ depth: 4, batch: 1 });
      try {
        const queued = pairsOf(clip);
        assertSameFeatures(await extractAll(single, queued.pairs), want, 'batch 1');
        assert.deepEqual(single.submits(), { submits: queued.count, groups: queued.count });
      } finally {
        await single.close();
      }
      await assert.rejects(GpuBackend.open({ depth: 4, batch: 5 }), (e) => e.code === 'E_GPU' && /batch/.test(e.message));
    });

    it('reports mean stage times with timing on (null without, or without timestamp-query)', async function () {
      const t = backend.stageTimings();
      if (!gpu.features.has('timestamp-query')) {
        assert.equal(t, null);
        return;
      }
      assert.ok(t.frames > 0, 'frames timed');
      for (const k of ['upload', 'compute', 'readback', 'hostWrite', 'hostWait']) assert.ok(Number.isFinite(t[k]) && t[k] >= 0, `${k}: ${t[k]}`);
      assert.ok(t.compute > 0);
      const plain = await GpuBackend.open({});
      assert.equal(plain.stageTimings(), null);
      await plain.close();
    });

    it('warns once about a software adapter, and describes the adapter', function () {
      assert.match(backend.description, /^gpu, /);
      if (backend.gpu.isSoftware) assert.ok(warnings.some((w) => /software adapter/.test(w)), warnings.join('\n'));
      else assert.equal(warnings.length, 0);
    });
  });

  describe('failures', function () {
    it('a device lost mid-stream errors the stream with E_GPU (no hang), every frame released once', async function () {
      const clip = await loadClip(CLIPS[0]);
      const b = await GpuBackend.open({});
      try {
        const { pairs, releases, count } = pairsOf(clip);
        let seen = 0;
        const outcome = new Promise((resolve) => {
          b.extract(from(pairs)).subscribe({
            next() {
              if (++seen === 2) b.gpu.device.destroy(); // not through close(): an unexpected loss
            },
            error: (e) => resolve(e),
            complete: () => resolve(new Error('completed despite the lost device')),
          });
        });
        const error = await within(outcome, 60000, 'lost device');
        assert.ok(error instanceof BackendError, String(error));
        assert.equal(error.code, 'E_GPU');
        assert.ok(seen < count, 'stopped early');
        await new Promise((r) => setTimeout(r, 200));
        assertAllReleasedOnce(releases, count);
      } finally {
        await b.close();
      }
    });

    it('a device lost between frames errors a stream that is waiting for input', async function () {
      const clip = await loadClip(CLIPS[0]);
      const b = await GpuBackend.open({});
      try {
        const { pairs } = pairsOf(clip);
        const slow = new Observable((sub) => {
          sub.next(pairs[0]);
          sub.next(pairs[1]);
          // ... and nothing more for a long time
        });
        const outcome = new Promise((resolve) => {
          b.extract(slow).subscribe({ next() { b.gpu.device.destroy(); }, error: resolve, complete: () => resolve(new Error('completed')) });
        });
        const error = await within(outcome, 60000, 'lost device while idle');
        assert.equal(error.code, 'E_GPU');
      } finally {
        await b.close();
      }
    });

    it('GPU validation errors in a frame\'s commands error the stream (no stale stats)', async function () {
      const clip = await loadClip(CLIPS[0]);
      const bad = async () => ({
        statsLength: 20,
        encode(enc, planes, out) {
          enc.copyBufferToBuffer(planes.ref, 0, out.buffer, 0, 3); // size not a multiple of 4
        },
        destroy() {},
      });
      const b = await GpuBackend.open({ kernelFactories: { vif: bad } });
      try {
        const { pairs, releases, count } = pairsOf(clip);
        const error = await within(extractAll(b, pairs).then(() => new Error('no error'), (e) => e), 60000, 'validation error');
        assert.equal(error.code, 'E_GPU', String(error));
        await new Promise((r) => setTimeout(r, 200));
        assertAllReleasedOnce(releases, count);
      } finally {
        await b.close();
      }
    });

    it('a kernel that throws while encoding, or fails to compile, gives E_GPU; the stream can be retried', async function () {
      const clip = await loadClip(CLIPS[0]);
      let fail = true;
      const flaky = async (g) => {
        if (fail) throw new BackendError('E_GPU', 'kernel does not compile');
        // As many accumulators as the native finish step takes for ADM, all zero.
        const adm = loadNative().statsLayout().adm;
        return { statsLength: adm, encode(enc, planes, out) { enc.clearBuffer(out.buffer, out.offset, adm * 8); }, destroy() {} };
      };
      const throwing = async () => ({ statsLength: 20, encode() { throw new Error('boom'); }, destroy() {} });
      const b = await GpuBackend.open({ kernelFactories: { adm: flaky } });
      const c = await GpuBackend.open({ kernelFactories: { vif: throwing } });
      try {
        await assert.rejects(extractAll(b, pairsOf(clip).pairs), (e) => e.code === 'E_GPU' && /does not compile/.test(e.message));
        fail = false;
        const ok = await extractAll(b, pairsOf(clip).pairs);
        assert.equal(ok.length, clip.ref.length);
        const { pairs, releases, count } = pairsOf(clip);
        await assert.rejects(extractAll(c, pairs), (e) => e.code === 'E_GPU' && /boom/.test(e.message));
        await new Promise((r) => setTimeout(r, 200));
        assertAllReleasedOnce(releases, count);
      } finally {
        await b.close();
        await c.close();
      }
    });

    it('unsubscribing mid-stream releases every frame once; close() then refuses new streams', async function () {
      const clip = await loadClip(CLIPS[0]);
      const b = await GpuBackend.open({});
      const { pairs, releases, count } = pairsOf(clip);
      const first = await firstValueFrom(b.extract(from(pairs)).pipe(rxTimeout(60000)));
      assert.equal(first.index, 0);
      await new Promise((r) => setTimeout(r, 300));
      assertAllReleasedOnce(releases, count);
      await b.close();
      await assert.rejects(extractAll(b, pairsOf(clip).pairs), (e) => e.code === 'E_GPU');
    });
  });

  describe('wiring', function () {
    it('createBackend: gpu opens the gpu backend (software adapters too), auto only on hardware', async function () {
      const seen = [];
      const g = await createBackend('gpu', { threads: 2, onWarning: (m) => seen.push(m) });
      try {
        assert.equal(g.kind, 'gpu');
        assert.ok(g instanceof GpuBackend);
        if (g.gpu.isSoftware) assert.ok(seen.some((m) => /software adapter/.test(m)));
      } finally {
        await g.close();
      }
      const auto = await createBackend('auto', { threads: 2 });
      try {
        assert.equal(auto.kind, (await hasHardwareAdapter()) ? 'gpu' : 'cpu');
      } finally {
        await auto.close();
      }
      await assert.rejects(createBackend('gpu', { threads: 2, gpuAdapter: 'no such adapter 1234' }), (e) => e.code === 'E_GPU' && /no WebGPU adapter matches/.test(e.message));
    });

    it('the CLI scores with --backend gpu, equal to --backend cpu, and warns about a software adapter', function () {
      const clip = goldenClip(CLIPS[0].name);
      const tmp = mkdtempSync(join(tmpdir(), 'vmaf-gpu-cli-'));
      const run = (backend) => {
        const out = join(tmp, `${backend}.json`);
        const r = spawnSync(process.execPath, [BIN, '-r', clip.ref, '-d', clip.dis, '--backend', backend, '--json', '--precision', '17', '-o', out], {
          encoding: 'utf8',
          timeout: 300000,
          env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? tmp },
        });
        assert.equal(r.status, 0, `--backend ${backend}: exit ${r.status} ${r.signal ?? ''}\n${r.stderr}`);
        return { log: JSON.parse(readFileSync(out, 'utf8')), stderr: r.stderr };
      };
      const gpuRun = run('gpu');
      const cpuRun = run('cpu');
      assert.deepEqual(gpuRun.log.frames, cpuRun.log.frames);
      assert.deepEqual(gpuRun.log.pooled_metrics, cpuRun.log.pooled_metrics);
      if (backend.gpu.isSoftware) assert.match(gpuRun.stderr, /vmaf-stream: warning: the gpu backend runs on a software adapter/);
      const bad = spawnSync(process.execPath, [BIN, '-r', clip.ref, '-d', clip.dis, '--backend', 'gpu', '--gpu-adapter', 'no such adapter 1234', '-q'], { encoding: 'utf8', timeout: 120000 });
      assert.equal(bad.status, 1, bad.stderr);
      assert.match(bad.stderr, /no WebGPU adapter matches 'no such adapter 1234'/);
    });
  });
});
