/**
 * Number formatting that reproduces C's printf (glibc, x86-64) byte for byte, as
 * libvmaf's log writers use it:
 *
 * - `%.Nf` and `%.Ng` are rounded from the double's exact binary value, ties to even
 *   (glibc's rule; JavaScript's toFixed/toExponential break ties upwards, so exact ties
 *   are detected and redone with BigInt arithmetic).
 * - `%g` switches to exponent notation when the exponent is below -4 or at least the
 *   precision, strips trailing zeros, and writes the exponent with a sign and at least
 *   two digits: `1.0000000000000001e-05`, `1e+20`.
 * - Non-finite values print as glibc does: `inf`, `-inf`, `nan`, and `-nan` for a NaN
 *   whose sign bit is set (the NaN that 0/0 yields on x86 in C has it set; a JavaScript
 *   NaN usually does not, so it prints `nan`).
 * - Negative zero keeps its sign: `-0.000000`, `-0`.
 */

const bits = new DataView(new ArrayBuffer(8));

function signBit(x: number): boolean {
  bits.setFloat64(0, x);
  return (bits.getUint32(0) & 0x80000000) !== 0;
}

const pow10Cache: bigint[] = [1n];
function pow10(n: number): bigint {
  for (let i = pow10Cache.length; i <= n; i++) pow10Cache.push(pow10Cache[i - 1]! * 10n);
  return pow10Cache[n]!;
}

/** round_half_even(|x| * 10^k) for a finite, nonzero x, exactly. */
function roundScaled(x: number, k: number): bigint {
  bits.setFloat64(0, x);
  const hi = bits.getUint32(0);
  const lo = bits.getUint32(4);
  const exponentField = (hi >>> 20) & 0x7ff;
  let mantissa = (BigInt(hi & 0xfffff) << 32n) | BigInt(lo);
  let exponent: number;
  if (exponentField === 0) {
    exponent = -1074; // subnormal
  } else {
    mantissa |= 1n << 52n;
    exponent = exponentField - 1075;
  }
  // |x| * 10^k = num / den
  let num = mantissa;
  let den = 1n;
  if (k >= 0) num *= pow10(k);
  else den = pow10(-k);
  if (exponent >= 0) num <<= BigInt(exponent);
  else den <<= BigInt(-exponent);
  let q = num / den;
  const twice = (num - q * den) * 2n;
  if (twice > den || (twice === den && (q & 1n) === 1n)) q += 1n;
  return q;
}

/**
 * Whether |x| lies exactly halfway between two multiples of 10^-n (n >= 0). A double
 * m * 2^-k (m odd, k > 0) has exactly k decimal places, the last one a 5, so it is a
 * tie at n places exactly when k = n + 1. Scaling by a power of two is exact here.
 */
function isTie(ax: number, n: number): boolean {
  return Number.isInteger(ax * 2 ** (n + 1)) && !Number.isInteger(ax * 2 ** n);
}

function nonFinite(x: number): string {
  if (Number.isNaN(x)) return signBit(x) ? '-nan' : 'nan';
  return x < 0 ? '-inf' : 'inf';
}

function checkDigits(digits: number, what: string): void {
  if (!Number.isInteger(digits) || digits < 0 || digits > 100) {
    throw new RangeError(`${what} precision must be an integer from 0 to 100, got ${digits}`);
  }
}

/** C's `printf("%.{digits}f", x)`. */
export function formatFixed(x: number, digits: number): string {
  checkDigits(digits, '%f');
  if (!Number.isFinite(x)) return nonFinite(x);
  const sign = signBit(x) ? '-' : '';
  const ax = Math.abs(x);
  if (ax < 1e21 && !isTie(ax, digits)) return sign + ax.toFixed(digits); // also 0
  const q = roundScaled(ax, digits).toString().padStart(digits + 1, '0');
  if (digits === 0) return sign + q;
  return `${sign}${q.slice(0, q.length - digits)}.${q.slice(q.length - digits)}`;
}

/** C's `printf("%.{precision}g", x)`. */
export function formatGeneral(x: number, precision: number): string {
  checkDigits(precision, '%g');
  if (!Number.isFinite(x)) return nonFinite(x);
  const p = precision === 0 ? 1 : precision;
  const sign = signBit(x) ? '-' : '';
  const ax = Math.abs(x);
  if (ax === 0) return sign + '0';

  // p significant digits and the decimal exponent after rounding to them.
  let digits: string;
  let exponent: number;
  const fast = ax.toExponential(p - 1);
  const e = fast.indexOf('e');
  exponent = Number(fast.slice(e + 1));
  const places = p - 1 - exponent;
  if (places >= 0 && !isTie(ax, places)) {
    digits = p > 1 ? fast[0]! + fast.slice(2, e) : fast.slice(0, e);
  } else {
    // Exact path. The exponent of ax itself (before rounding): 21 significant digits
    // can't carry a double over a power of ten, so this one is exact.
    const exact = ax.toExponential(20);
    const e10 = Number(exact.slice(exact.indexOf('e') + 1));
    const q = roundScaled(ax, p - 1 - e10);
    if (q === pow10(p)) {
      digits = '1' + '0'.repeat(p - 1);
      exponent = e10 + 1;
    } else {
      digits = q.toString();
      exponent = e10;
    }
  }

  if (exponent < -4 || exponent >= p) {
    let mantissa = digits[0]!;
    const rest = digits.slice(1).replace(/0+$/, '');
    if (rest) mantissa += '.' + rest;
    const abs = Math.abs(exponent);
    return `${sign}${mantissa}e${exponent < 0 ? '-' : '+'}${abs < 10 ? '0' : ''}${abs}`;
  }
  // Fixed notation with p - 1 - exponent decimals, trailing zeros removed.
  let text: string;
  if (exponent >= 0) {
    const intPart = digits.slice(0, exponent + 1);
    const frac = digits.slice(exponent + 1).replace(/0+$/, '');
    text = frac ? `${intPart}.${frac}` : intPart;
  } else {
    const frac = ('0'.repeat(-exponent - 1) + digits).replace(/0+$/, '');
    text = `0.${frac}`;
  }
  return sign + text;
}

/**
 * libvmaf's count_leading_zeros_d (output.c): the zeros after the decimal point of
 * |x|'s fractional part, counted by multiplying by 10 until it reaches 1. The integer
 * part comes from a C `(int)` cast, which on x86-64 yields INT_MIN for values out of
 * int range (and NaN); the fractional part then is >= 1 and the count 0.
 */
export function libvmafLeadingZeros(x: number): number {
  const ax = x < 0 ? -x : x;
  const intPart = ax < 2147483648 ? Math.trunc(ax) : -2147483648; // NaN too
  let fraction = ax - intPart;
  let count = 0;
  while (fraction < 1.0 && fraction !== 0) {
    fraction *= 10;
    count++;
  }
  return count;
}

/**
 * A metric value as the logs print it. `precision` undefined: libvmaf 3.2.0's own rule,
 * `%.6f`, or `%.16f` where the fractional part has more than 6 leading zeros (so tiny
 * values keep some digits). A number: `%.{precision}g` (17 round-trips every double).
 * Non-finite values print as printf does (`nan`, `inf`); the JSON writers print `null`.
 */
export function formatNumber(value: number, precision: number | undefined): string {
  if (precision === undefined) return formatFixed(value, libvmafLeadingZeros(value) <= 6 ? 6 : 16);
  return formatGeneral(value, precision);
}
