// Differential test of lib/f32.wgsl (the integer-only float operations the SSIM kernels use)
// against the host's IEEE arithmetic: f32_from_f64 against Math.fround (a double rounded to
// a float, to nearest even, subnormals kept), f32_mul against Math.fround(a * b) (the double
// product of two floats is exact, so that is the correctly rounded float product), f32_add and
// f32_sub against Math.fround(a +- b) (correctly rounded too: see the test). Over a
// million operands per op: random bits, the subnormal and overflow boundaries, exact ties
// and their neighbours, zeros, infinities, NaNs. GPU_F32_SEED replays a run.
// XDG_RUNTIME_DIR must be set for Mesa's lavapipe (any writable folder).
import assert from 'node:assert/strict';
import { openGpuDevice } from '../dist/kernels/gpu/device.js';
import { composeWgsl } from '../dist/kernels/gpu/wgsl.js';
import { makeRng } from './helpers/gpu.mjs';

const SEED = Number(process.env.GPU_F32_SEED ?? 0x5f32c0de) >>> 0;
const N = 1 << 20;

const f64 = new Float64Array(1);
const f64w = new Uint32Array(f64.buffer);
const f32 = new Float32Array(1);
const f32w = new Uint32Array(f32.buffer);
const doubleOf = (lo, hi) => { f64w[0] = lo; f64w[1] = hi; return f64[0]; };
const wordsOf = (x) => { f64[0] = x; return [f64w[0], f64w[1]]; };
const floatBits = (x) => { f32[0] = x; return f32w[0]; };
const floatOf = (bits) => { f32w[0] = bits; return f32[0]; };
const isNaN32 = (b) => (b & 0x7fffffff) >>> 0 > 0x7f800000;
const hex = (x) => `0x${(x >>> 0).toString(16).padStart(8, '0')}`;

// A double that rounds to near a float's boundaries: a float widened, then nudged by a tie
// (bit 28 of the low word: half a float ulp) and maybe a double ulp either way.
function nearTie(R, floatWord) {
  const [lo, hi] = wordsOf(floatOf(floatWord));
  const tie = (lo + 0x10000000) >>> 0;
  const nudge = R.pick([0, 0, 1, -1]);
  return [(tie + nudge) >>> 0, hi];
}

function randomFloatWord(R) {
  const s = R.bool() ? 0x80000000 : 0;
  switch (R.int(8)) {
    case 0: return R.u32();
    case 1: return (s | (R.u32() & 0x007fffff)) >>> 0; // subnormal
    case 2: return (s | ((1 + R.int(8)) << 23) | (R.u32() & 0x7fffff)) >>> 0; // just above subnormal
    case 3: return (s | ((254 - R.int(8)) << 23) | (R.u32() & 0x7fffff)) >>> 0; // near overflow
    case 4: return (s | ((100 + R.int(56)) << 23) | (R.u32() & 0x7fffff)) >>> 0; // moderate
    case 5: return floatBits(R.int(65536) / R.pick([1, 4, 16, 256])); // samples as the SSIM kernels read them
    case 6: return R.pick([0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffc12345, 1, 0x80000001, 0x007fffff, 0x00800000, 0x7f7fffff, 0x3f800000]);
    default: return floatBits(floatOf((s | ((110 + R.int(30)) << 23) | (R.u32() & 0x7fffff)) >>> 0)); // SSIM-like magnitudes
  }
}

function randomDouble(R) {
  const s = R.bool() ? 0x80000000 : 0;
  switch (R.int(8)) {
    case 0: return [R.u32(), R.u32()];
    case 1: return nearTie(R, randomFloatWord(R)); // ties in every float range
    case 2: return [R.u32(), (s | ((1023 - 126 - R.int(30)) << 20) | (R.u32() & 0xfffff)) >>> 0]; // float subnormal range and below
    case 3: return [R.u32(), (s | ((1023 + 126 + R.int(4)) << 20) | (R.u32() & 0xfffff)) >>> 0]; // around float overflow
    case 4: { // k * 2^-150 with odd k: exact ties between subnormals, and their neighbours
      const k = (R.int(1 << 24) | 1) * (R.bool() ? 1 : -1);
      const [lo, hi] = wordsOf(k * 2 ** -150);
      return [(lo + R.pick([0, 0, 1, -1])) >>> 0, hi];
    }
    case 5: return [R.u32(), (s | ((1023 - 40 + R.int(80)) << 20) | (R.u32() & 0xfffff)) >>> 0];
    case 6: return R.pick([[0, 0], [0, 0x80000000], [0, 0x7ff00000], [0, 0xfff00000], [0, 0x7ff80000], [1, 0x7ff00000], [0xffffffff, 0x000fffff], [0, 0x47efffff], [0xf0000000, 0x47efffff], [0xefffffff, 0x47efffff], [0, 0x36a00000], [1, 0x36a00000], [0, 0x369fffff]]);
    default: return wordsOf((R.u32() / 2 ** 32) * 2 ** (R.int(60) - 30)); // the filters' sums
  }
}

describe('lib/f32.wgsl: integer-exact float rounding, products and sums (gpu)', function () {
  this.timeout(600000);
  let gpu;
  before(async () => (gpu = await openGpuDevice({ label: 'f32 tests' })));
  after(() => gpu?.destroy());

  async function run(body, inWords, input) {
    const n = input.length / inWords;
    const code = composeWgsl(['lib/f32.wgsl'], `
@group(0) @binding(0) var<storage, read> inp: array<u32>;
@group(0) @binding(1) var<storage, read_write> outp: array<u32>;
@group(0) @binding(2) var<uniform> params: vec4<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = gid.x + gid.y * params.y;
  if (i >= params.x) { return; }
  ${body}
}`);
    const pipeline = await gpu.createComputePipeline(code, { label: 'f32 test' });
    const d = gpu.device;
    const inBuf = d.createBuffer({ size: input.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    const outBuf = d.createBuffer({ size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const params = d.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    const groups = Math.ceil(n / 64);
    const gx = Math.min(groups, 32768);
    try {
      d.queue.writeBuffer(inBuf, 0, input);
      d.queue.writeBuffer(params, 0, new Uint32Array([n, gx * 64, 0, 0]));
      const enc = d.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, d.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [{ binding: 0, resource: { buffer: inBuf } }, { binding: 1, resource: { buffer: outBuf } }, { binding: 2, resource: { buffer: params } }],
      }));
      pass.dispatchWorkgroups(gx, Math.ceil(groups / gx));
      pass.end();
      d.queue.submit([enc.finish()]);
      return new Uint32Array(await gpu.read(outBuf));
    } finally {
      inBuf.destroy();
      outBuf.destroy();
      params.destroy();
    }
  }

  function check(what, n, got, want, describe) {
    let bad = 0;
    const samples = [];
    for (let i = 0; i < n; i++) {
      const w = want(i);
      const ok = isNaN32(w) ? isNaN32(got[i]) && (got[i] & 0x00400000) !== 0 : got[i] === w;
      if (!ok && ++bad <= 8) samples.push(`${describe(i)}: got ${hex(got[i])}, want ${hex(w)}`);
    }
    assert.equal(bad, 0, `${what}: ${bad} of ${n} wrong (seed ${SEED}):\n  ${samples.join('\n  ')}`);
  }

  it(`f32_from_f64 == Math.fround on ${N} doubles (ties, subnormals, overflow, NaN)`, async function () {
    const R = makeRng(SEED);
    const input = new Uint32Array(2 * N);
    for (let i = 0; i < N; i++) input.set(randomDouble(R), 2 * i);
    const got = await run('outp[i] = f32_from_f64(vec2<u32>(inp[2u * i], inp[2u * i + 1u]));', 2, input);
    const x = (i) => doubleOf(input[2 * i], input[2 * i + 1]);
    check('f32_from_f64', N, got, (i) => floatBits(Math.fround(x(i))), (i) => `${hex(input[2 * i + 1])}${hex(input[2 * i]).slice(2)} (${x(i)})`);
    // The NaN results keep the sign and are quiet, as cvtsd2ss gives them.
    for (let i = 0; i < N; i++) if (Number.isNaN(x(i))) assert.equal(got[i] >>> 31, input[2 * i + 1] >>> 31);
  });

  it(`f32_mul == Math.fround(a * b) on ${N} float pairs (ties, subnormal products, overflow, specials)`, async function () {
    const R = makeRng(SEED + 1);
    const input = new Uint32Array(2 * N);
    for (let i = 0; i < N; i++) {
      let a = randomFloatWord(R);
      let b = randomFloatWord(R);
      if (R.int(4) === 0) { // exponents that put the product near the subnormal or overflow edge
        const ea = 1 + R.int(253);
        const eb = R.bool() ? Math.max(1, Math.min(254, 127 - 126 - (ea - 127) + R.int(30) - 24)) : Math.max(1, Math.min(254, 127 + 127 - (ea - 127) - R.int(3)));
        a = ((a & 0x807fffff) | (ea << 23)) >>> 0;
        b = ((b & 0x807fffff) | (eb << 23)) >>> 0;
      } else if (R.int(4) === 0) { // odd 12-bit by 13-bit significands: products that tie at 24 bits
        a = floatBits((2049 + 2 * R.int(1023)) * 2 ** (R.int(40) - 20));
        b = floatBits((4097 + 2 * R.int(2047)) * 2 ** (R.int(40) - 20));
      }
      input[2 * i] = a;
      input[2 * i + 1] = b;
    }
    const got = await run('outp[i] = f32_mul(inp[2u * i], inp[2u * i + 1u]);', 2, input);
    check('f32_mul', N, got, (i) => floatBits(Math.fround(floatOf(input[2 * i]) * floatOf(input[2 * i + 1]))), (i) => `${hex(input[2 * i])} * ${hex(input[2 * i + 1])} (${floatOf(input[2 * i])} * ${floatOf(input[2 * i + 1])})`);
  });

  // The host's reference for a float sum is Math.fround(a + b): the double sum of two floats
  // rounded to float is the correctly rounded float sum (53 >= 2 * 24 + 2 bits, Figueroa 1995).
  for (const [name, op, sign] of [['f32_add', '+', 1], ['f32_sub', '-', -1]]) {
    it(`${name} == Math.fround(a ${op} b) on ${N} float pairs (cancellation, far exponents, subnormals, specials)`, async function () {
      const R = makeRng(SEED + 2 + (sign < 0 ? 1 : 0));
      const input = new Uint32Array(2 * N);
      for (let i = 0; i < N; i++) {
        let a = randomFloatWord(R);
        let b = randomFloatWord(R);
        const shape = R.int(4);
        if (shape === 0) { // nearly equal magnitudes: cancellation (opposite signs for the sum)
          b = (a ^ (R.int(1 << (1 + R.int(12))) & 0x7fffff) ^ (sign > 0 ? 0x80000000 : 0)) >>> 0;
        } else if (shape === 1) { // exponents 20 to 30 apart: sticky bits and ties at the rounding point
          const ea = 40 + R.int(170);
          a = ((a & 0x807fffff) | (ea << 23)) >>> 0;
          b = ((b & 0x807fffff) | ((ea - 20 - R.int(11)) << 23)) >>> 0;
        }
        input[2 * i] = a;
        input[2 * i + 1] = b;
      }
      const got = await run(`outp[i] = ${name}(inp[2u * i], inp[2u * i + 1u]);`, 2, input);
      // Bits compared exactly: a zero sum's sign too (+0 unless both are -0, as addss gives it).
      check(name, N, got, (i) => floatBits(Math.fround(floatOf(input[2 * i]) + sign * floatOf(input[2 * i + 1]))), (i) => `${hex(input[2 * i])} ${op} ${hex(input[2 * i + 1])} (${floatOf(input[2 * i])} ${op} ${floatOf(input[2 * i + 1])})`);
    });
  }
});
