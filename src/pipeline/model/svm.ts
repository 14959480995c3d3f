/**
 * The support-vector regression inside a VMAF model: libsvm's text model format, and
 * its prediction for an epsilon-SVR / nu-SVR with an RBF kernel,
 *
 *   f(x) = sum_i coef_i * exp(-gamma * ||x - sv_i||^2) - rho,
 *
 * evaluated with libsvm's order of operations: support vectors in file order, squared
 * distances accumulated over feature indices in ascending order, exp() as glibc rounds it.
 * libsvm stores vectors sparsely and skips absent indices, adding x_j^2 (or sv_j^2) for
 * them; storing absent values as 0 here gives the same terms, (x_j - 0)^2 = x_j * x_j.
 */
import { loadNative } from '../../kernels/native.js';
import { expGlibc, expTableWords } from './exp.js';

type RbfSum = (model: Float64Array, x: Float64Array) => number;
/** The addon's rbfSum once its exp table is set; null without one (the JS loop); undefined until first asked. */
let nativeRbf: RbfSum | null | undefined;

/**
 * The addon's RBF sum: the loop below and expGlibc in C++, the same operations in the same
 * order (fma correctly rounded, no contraction), so the same bits, about ten times faster
 * (the SVM was ~5% of a gpu run's main thread per frame). Null where the addon is missing
 * or predates it.
 */
function nativeRbfSum(): RbfSum | null {
  if (nativeRbf !== undefined) return nativeRbf;
  nativeRbf = null;
  try {
    const addon = loadNative();
    const { rbfSum, setExpTable } = addon;
    if (rbfSum && setExpTable) {
      setExpTable.call(addon, Uint32Array.from(expTableWords().flat()));
      nativeRbf = (model, x) => rbfSum.call(addon, model, x);
    }
  } catch {
    // no addon: predictions stay in JS
  }
  return nativeRbf;
}

/** @internal For tests: predict with the addon (default, where there is one) or in JS alone. */
export function useNativeRbf(on: boolean): void {
  nativeRbf = on ? undefined : null;
}

export class SvmFormatError extends Error {}

export interface SvrModel {
  readonly svmType: 'epsilon_svr' | 'nu_svr';
  readonly gamma: number;
  readonly rho: number;
  /** Vector length: the feature count, or the largest index a support vector uses if that is more. */
  readonly dimension: number;
  readonly supportVectorCount: number;
  /** f(x) for x of length <= dimension (missing trailing values count as 0). */
  predict(x: Float64Array): number;
}

const SVM_TYPES = ['c_svc', 'nu_svc', 'one_class', 'epsilon_svr', 'nu_svr'] as const;
const KERNEL_TYPES = ['linear', 'polynomial', 'rbf', 'sigmoid', 'precomputed'] as const;

/**
 * Parses a libsvm model as text (the "model" string of a VMAF model file) for inputs of
 * `featureCount` values.
 */
export function parseSvrModel(text: string, featureCount: number): SvrModel {
  // Header: whitespace-separated keywords and values, up to the "SV" line.
  const svAt = /(^|\s)SV(\r?\n|$)/.exec(text);
  if (!svAt) throw new SvmFormatError('no "SV" section');
  const header = text.slice(0, svAt.index).split(/\s+/).filter((t) => t.length > 0);
  const body = text.slice(svAt.index + svAt[0].length);

  let svmType: string | undefined;
  let kernelType: string | undefined;
  let gamma: number | undefined;
  let nrClass: number | undefined;
  let totalSv: number | undefined;
  let rho: number[] | undefined;
  const num = (token: string | undefined, what: string): number => {
    const v = token === undefined ? NaN : Number(token);
    if (!Number.isFinite(v)) throw new SvmFormatError(`bad ${what}: ${token ?? '(missing)'}`);
    return v;
  };
  const int = (token: string | undefined, what: string): number => {
    const v = num(token, what);
    if (!Number.isInteger(v)) throw new SvmFormatError(`bad ${what}: ${token}`);
    return v;
  };
  for (let i = 0; i < header.length; ) {
    const key = header[i++]!;
    const pairs = (): number => {
      if (nrClass === undefined) throw new SvmFormatError(`${key} before nr_class`);
      return (nrClass * (nrClass - 1)) / 2;
    };
    switch (key) {
      case 'svm_type':
        svmType = header[i++];
        if (!SVM_TYPES.includes(svmType as (typeof SVM_TYPES)[number])) {
          throw new SvmFormatError(`unknown svm_type ${svmType ?? '(missing)'}`);
        }
        break;
      case 'kernel_type':
        kernelType = header[i++];
        if (!KERNEL_TYPES.includes(kernelType as (typeof KERNEL_TYPES)[number])) {
          throw new SvmFormatError(`unknown kernel_type ${kernelType ?? '(missing)'}`);
        }
        break;
      case 'degree': int(header[i++], 'degree'); break;
      case 'coef0': num(header[i++], 'coef0'); break;
      case 'gamma': gamma = num(header[i++], 'gamma'); break;
      case 'nr_class': nrClass = int(header[i++], 'nr_class'); break;
      case 'total_sv': totalSv = int(header[i++], 'total_sv'); break;
      case 'rho': {
        const n = pairs();
        rho = [];
        for (let k = 0; k < n; k++) rho.push(num(header[i++], 'rho'));
        break;
      }
      case 'probA':
      case 'probB': {
        const n = pairs();
        for (let k = 0; k < n; k++) num(header[i++], key);
        break;
      }
      case 'label':
      case 'nr_sv': {
        if (nrClass === undefined) throw new SvmFormatError(`${key} before nr_class`);
        for (let k = 0; k < nrClass; k++) int(header[i++], key);
        break;
      }
      default:
        throw new SvmFormatError(`unknown text in model: ${key}`);
    }
  }
  if (svmType !== 'epsilon_svr' && svmType !== 'nu_svr') {
    throw new SvmFormatError(`svm_type ${svmType ?? '(missing)'} is not a regression (epsilon_svr or nu_svr)`);
  }
  if (kernelType !== 'rbf') throw new SvmFormatError(`kernel_type ${kernelType ?? '(missing)'} is not supported (only rbf)`);
  if (gamma === undefined) throw new SvmFormatError('no gamma');
  if (nrClass !== 2) throw new SvmFormatError(`nr_class ${nrClass ?? '(missing)'} (a regression model has 2)`);
  if (totalSv === undefined || totalSv < 1) throw new SvmFormatError('no total_sv');
  if (!rho || rho.length !== 1) throw new SvmFormatError('no rho');

  const lines = body.split(/\r?\n/);
  const coefs = new Float64Array(totalSv);
  const sparse: Array<Array<[number, number]>> = [];
  let dimension = 0;
  for (let s = 0; s < totalSv; s++) {
    const line = lines[s];
    if (line === undefined) throw new SvmFormatError(`expected ${totalSv} support vectors, found ${s}`);
    const tokens = line.trim().split(/\s+/).filter((t) => t.length > 0);
    coefs[s] = num(tokens[0], `coefficient of support vector ${s + 1}`);
    const entries: Array<[number, number]> = [];
    let last = 0;
    for (let t = 1; t < tokens.length; t++) {
      const m = /^(\d+):(\S+)$/.exec(tokens[t]!);
      if (!m) throw new SvmFormatError(`support vector ${s + 1}: bad entry "${tokens[t]}"`);
      const index = Number(m[1]);
      if (index <= last) throw new SvmFormatError(`support vector ${s + 1}: indices must ascend (${index} after ${last})`);
      last = index;
      entries.push([index, num(m[2], `support vector ${s + 1} value`)]);
    }
    if (last > dimension) dimension = last;
    sparse.push(entries);
  }
  if (featureCount > dimension) dimension = featureCount;
  const vectors = new Float64Array(totalSv * dimension);
  sparse.forEach((entries, s) => {
    for (const [index, value] of entries) vectors[s * dimension + index - 1] = value;
  });
  return new RbfSvr(svmType, gamma, rho[0]!, dimension, coefs, vectors);
}

class RbfSvr implements SvrModel {
  readonly supportVectorCount: number;
  private readonly negGamma: number;
  private readonly x: Float64Array;
  /** [-gamma, dimension, count, coefs..., vectors...]: the addon's rbfSum's model. */
  private readonly packed: Float64Array;

  constructor(
    readonly svmType: 'epsilon_svr' | 'nu_svr',
    readonly gamma: number,
    readonly rho: number,
    readonly dimension: number,
    private readonly coefs: Float64Array,
    private readonly vectors: Float64Array,
  ) {
    this.supportVectorCount = coefs.length;
    this.negGamma = -gamma;
    this.x = new Float64Array(dimension);
    this.packed = new Float64Array(3 + coefs.length + vectors.length);
    this.packed.set([this.negGamma, dimension, coefs.length]);
    this.packed.set(coefs, 3);
    this.packed.set(vectors, 3 + coefs.length);
  }

  predict(input: Float64Array): number {
    const dim = this.dimension;
    if (input.length > dim) throw new RangeError(`input has ${input.length} values, the model ${dim}`);
    let x = input;
    if (input.length < dim) {
      x = this.x;
      x.set(input); // the rest stays 0
    }
    const native = nativeRbfSum();
    if (native) return native(this.packed, x) - this.rho;
    const sv = this.vectors;
    const coefs = this.coefs;
    const negGamma = this.negGamma;
    let sum = 0;
    for (let i = 0, base = 0; i < coefs.length; i++, base += dim) {
      let dist = 0;
      for (let j = 0; j < dim; j++) {
        const d = x[j]! - sv[base + j]!;
        dist += d * d;
      }
      sum += coefs[i]! * expGlibc(negGamma * dist);
    }
    return sum - this.rho;
  }
}
