/**
 * exp(x) rounded exactly as glibc's libm rounds it on x86-64 with FMA (glibc >= 2.28,
 * the `__exp_fma` variant its ifunc picks on any AVX2 + FMA CPU).
 *
 * libvmaf's SVM evaluates exp() once per support vector per frame, and V8's Math.exp
 * (an fdlibm port) differs from glibc's in the last bit for roughly one argument in ten,
 * which is enough to make the VMAF score differ from libvmaf's in its last bits. So the
 * RBF kernel uses this function instead.
 *
 * The method is the table-driven one published in ARM's optimized-routines (MIT /
 * Apache-2.0 WITH LLVM-exception), which glibc adopted: exp(x) = 2^(k/128) * exp(r),
 * |r| <= ln2/256, with a degree-5 polynomial for exp(r) - 1. The 2^(i/128) table is
 * computed here at load time (exactly, with BigInt) rather than copied. glibc's FMA
 * build contracts several multiply-adds into fused ones; those are reproduced with an
 * exact software fma (fmaEmulated), so every intermediate rounding is the same.
 */

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
// Float64Array shares the platform's byte order; V8 on every supported target is little-endian.
const LO = 0;
const HI = 1;

function fromBits(hi: number, lo: number): number {
  u32[HI] = hi >>> 0;
  u32[LO] = lo >>> 0;
  return f64[0]!;
}

function fromHexFloat(text: string): number {
  // "[-]0x1.<hex>p<exp>" with up to 13 hex digits after the point: exact.
  const m = /^(-?)0x1\.([0-9a-f]{0,13})p(-?\d+)$/.exec(text);
  if (!m) throw new Error(`bad hex float ${text}`);
  const frac = parseInt((m[2]! + '0000000000000').slice(0, 13), 16); // 52 bits
  const value = (1 + frac / 2 ** 52) * 2 ** Number(m[3]);
  return m[1] === '-' ? -value : value;
}

const N_BITS = 7;
const N = 1 << N_BITS;
const INV_LN2_N = fromHexFloat('0x1.71547652b82fep0') * N;
const NEG_LN2_HI_N = fromHexFloat('-0x1.62e42fefa0000p-8');
const NEG_LN2_LO_N = fromHexFloat('-0x1.cf79abc9e3b3ap-47');
const SHIFT = fromHexFloat('0x1.8p52');
const C2 = fromHexFloat('0x1.ffffffffffdbdp-2');
const C3 = fromHexFloat('0x1.555555555543cp-3');
const C4 = fromHexFloat('0x1.55555cf172b91p-5');
const C5 = fromHexFloat('0x1.1111167a4d017p-7');
const TWO_P1009 = 2 ** 1009;
const TWO_M1022 = 2 ** -1022;

/**
 * For i in 0..N-1, with v = 2^(i/N) exactly: scale bits (as hi/lo words) of RN(v), minus
 * i << 45 so that adding k << 45 for the integer k later gives 2^(k/N)'s bits, and the
 * relative tail RN((v - RN(v)) / RN(v)).
 */
const TAIL = new Float64Array(N);
const SBITS_HI = new Uint32Array(N);
const SBITS_LO = new Uint32Array(N);

function buildTable(): void {
  const F = 256n; // fixed-point fraction bits
  const ONE = 1n << F;
  const isqrt = (n: bigint): bigint => {
    if (n < 2n) return n;
    let x = 1n << BigInt((n.toString(2).length >> 1) + 1);
    for (;;) {
      const y = (x + n / x) >> 1n;
      if (y >= x) return x;
      x = y;
    }
  };
  // roots[j] = 2^(2^j / N) in fixed point, j = 0..N_BITS-1
  const roots: bigint[] = [];
  let r = 2n * ONE;
  const chain: bigint[] = [];
  for (let j = 0; j < N_BITS; j++) {
    r = isqrt(r << F); // sqrt in fixed point
    chain.push(r); // 2^(1/2), 2^(1/4), ... 2^(1/N)
  }
  for (let j = 0; j < N_BITS; j++) roots.push(chain[N_BITS - 1 - j]!);
  for (let i = 0; i < N; i++) {
    let v = ONE;
    for (let j = 0; j < N_BITS; j++) if (i & (1 << j)) v = (v * roots[j]!) >> F;
    // v in [1, 2): RN to 53 bits, i.e. 52 fraction bits.
    const shift = F - 52n;
    let m = v >> shift;
    const rem = v - (m << shift);
    const half = 1n << (shift - 1n);
    if (rem > half || (rem === half && (m & 1n) === 1n)) m += 1n;
    const s = m << shift; // RN(v) in fixed point
    const frac = Number(m - (1n << 52n)); // 52-bit fraction of RN(v), exponent 0
    const hi = 0x3ff00000 + Math.floor(frac / 2 ** 32);
    const lo = frac % 2 ** 32;
    // tail = (v - s) / s, correctly rounded via a wide integer quotient.
    const K = 200n;
    const q = ((v - s) << K) / s; // truncates toward zero
    TAIL[i] = Number(q) / 2 ** Number(K);
    // Subtract i << 45 (i < 128, so only the high word changes, by i << 13).
    SBITS_HI[i] = (hi - (i << 13)) >>> 0;
    SBITS_LO[i] = lo;
  }
}
buildTable();

// ---- exact fused multiply-add -------------------------------------------------------

const SPLITTER = 134217729; // 2^27 + 1

/**
 * fma(a, b, c) = RN(a*b + c) with a single rounding, for finite arguments whose product
 * neither overflows nor underflows: Dekker's exact product a*b = uh + ul, the exact sum
 * c + uh = th + tl, then th + (tl + ul) with the one case where rounding twice can differ
 * from rounding once (th + RN(tl + ul) exactly halfway between two doubles) decided from
 * the sign of the discarded error (the role rounding-to-odd plays in Boldo & Melquiond,
 * "Emulation of a FMA and correctly rounded sums", IEEE TC 2008).
 * Outside that domain it returns a*b + c.
 */
export function fmaEmulated(a: number, b: number, c: number): number {
  const p = a * b;
  const inDomain = Math.abs(a) <= 1e300 && Math.abs(b) <= 1e300 && Math.abs(c) <= 1e300 &&
    Math.abs(p) <= 1e300 && (p === 0 || Math.abs(p) >= 1e-270);
  return inDomain ? fma(a, b, c) : p + c;
}

/** fmaEmulated without the domain check, for arguments known to be in range. */
function fma(a: number, b: number, c: number): number {
  const uh = a * b;
  // Veltkamp split + Dekker product: a*b = uh + ul exactly.
  let t = SPLITTER * a;
  const ah = t - (t - a);
  const al = a - ah;
  t = SPLITTER * b;
  const bh = t - (t - b);
  const bl = b - bh;
  const ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl;
  // TwoSum: c + uh = th + tl exactly.
  const th = c + uh;
  let bb = th - c;
  const tl = (c - (th - bb)) + (uh - bb);
  // The exact result is th + tl + ul. Let v = RN(tl + ul), err its rounding error.
  const v = tl + ul;
  bb = v - tl;
  const err = (tl - (v - bb)) + (ul - bb);
  const z = th + v;
  if (err === 0) return z; // th + v is exact: one rounding
  // err != 0 implies tl != 0, so |uh| < 2|th| (otherwise c + uh would be exact by
  // Sterbenz) and |v| <= ~1.5 ulp(th): v sits far below the rounding grid of z, and
  // RN(th + v) can differ from RN(th + v + err) only when th + v is exactly halfway
  // between two doubles. That is where rounding-to-odd would matter; resolve it directly.
  const d = v - (z - th); // th + v = z + d exactly (|th| >= |v|)
  if (d === 0) return z;
  const d2 = d + d;
  if ((z + d2) - z !== d2) return z; // |d| is below half the spacing: no tie
  // A tie, broken to even by RN; the exact value lies on err's side of it.
  return (d > 0) === (err > 0) ? z + d2 : z;
}

// ---- exp -----------------------------------------------------------------------------

/** exp(x) with glibc's (x86-64, FMA variant) result bits. */
export function expGlibc(x: number): number {
  f64[0] = x;
  const xhi = u32[HI]!;
  let abstop = (xhi >>> 20) & 0x7ff;
  // top12(0x1p-54) = 0x3c9, top12(512) = 0x408
  if (((abstop - 0x3c9) >>> 0) >= 0x408 - 0x3c9) {
    if (abstop < 0x3c9) return 1.0 + x; // tiny (also +-0)
    if (abstop >= 0x409) {
      if (x === -Infinity) return 0;
      if (abstop >= 0x7ff) return 1.0 + x; // +inf, NaN
      return x < 0 ? 0 : Infinity;
    }
    abstop = 0; // 512 <= |x| < 1024: handled by the special case below
  }
  const kdShifted = fma(INV_LN2_N, x, SHIFT);
  f64[0] = kdShifted;
  const kiLo = u32[LO]!;
  const kd = kdShifted - SHIFT;
  const r = fma(kd, NEG_LN2_LO_N, fma(kd, NEG_LN2_HI_N, x));
  const idx = kiLo & (N - 1);
  const topHi = (kiLo << (52 - N_BITS - 32)) >>> 0; // (ki << 45) >> 32
  const tail = TAIL[idx]!;
  let sHi = (SBITS_HI[idx]! + topHi) >>> 0;
  const sLo = SBITS_LO[idx]!;
  const r2 = r * r;
  const a = fma(r, C3, C2);
  const b = fma(r, C5, C4);
  const c = fma(a, r2, r + tail);
  const tmp = fma(r2 * r2, b, c);
  if (abstop === 0) {
    if ((kiLo & 0x80000000) === 0) {
      sHi = (sHi - (1009 << 20)) >>> 0;
      const scale = fromBits(sHi, sLo);
      return TWO_P1009 * fma(scale, tmp, scale);
    }
    sHi = (sHi + (1022 << 20)) >>> 0;
    const scale = fromBits(sHi, sLo);
    const p = scale * tmp;
    let y = scale + p;
    if (y < 1.0) {
      const hi = 1.0 + y;
      let lo = (scale - y) + p;
      lo = ((1.0 - hi) + y) + lo;
      y = (hi + lo) - 1.0;
      if (y === 0) y = 0;
    }
    return TWO_M1022 * y;
  }
  const scale = fromBits(sHi, sLo);
  return fma(scale, tmp, scale);
}

/** For tests: the generated table, as glibc lays it out (tail bits, scale bits) per entry. */
export function expTableWords(): Array<[number, number, number, number]> {
  const out: Array<[number, number, number, number]> = [];
  for (let i = 0; i < N; i++) {
    f64[0] = TAIL[i]!;
    out.push([u32[HI]!, u32[LO]!, SBITS_HI[i]!, SBITS_LO[i]!]);
  }
  return out;
}
