/**
 * One VMAF model turning a frame's features into its score, step by step as libvmaf does:
 *
 *   1. normalise each feature: slope_i * x_i + intercept_i   (linear_rescale; none: as is)
 *   2. predict with the SVM
 *   3. denormalise: (prediction - intercept) / slope
 *   4. transform, if enabled: polynomial p0 + p1*y + p2*y*y, then piecewise-linear knots,
 *      then out_lte_in / out_gte_in (output at most / at least the untransformed y)
 *   5. clip to score_clip, unless disabled
 *
 * Each step uses libvmaf's operations in libvmaf's order, so the score has the same bits.
 */
import { ModelError } from '../../errors.js';
import type { FeatureValues } from '../../types.js';
import { optionTextFromCli } from '../../extractors/option.js';
import { extractorProviding } from '../../extractors/registry.js';
import { resolveModelFeature, type FeatureRequest } from '../../extractors/request.js';
import type { FeatureOverride } from './model-spec.js';
import type { KnotPoint, ModelDefinition } from './model-file.js';

/** What a loaded model gives per frame: its score, plus the extras of a bootstrap model. */
export interface Model {
  /** Log key of the main score. */
  readonly name: string;
  readonly version: string;
  /** The FeatureValues keys predict() reads, e.g. integer_adm2_egl_1 for the NEG model. */
  readonly featureKeys: readonly string[];
  /** The extractor instances that compute them (the run plan's first requests). */
  readonly features: readonly FeatureRequest[];
  /** Scores keyed by log name: { [name]: score } and, for bootstrap models, the extras. */
  predict(features: FeatureValues): Record<string, number>;
  /** Why libvmaf predicts nothing with this model, where it does not (a run that predicts refuses it). */
  readonly scoreless?: string | undefined;
}

export interface PredictorSettings {
  /** Apply score_transform even where the file does not enable it (where it has one). */
  readonly enableTransform?: boolean;
  /** Skip score_clip. */
  readonly disableClip?: boolean;
  readonly overrides?: readonly FeatureOverride[];
}

/** One model_dict, ready to score frames. */
export class Predictor {
  /** Log keys of the inputs, in SVM order. */
  readonly featureKeys: readonly string[];
  /** The extractor instance and log key of each input, in SVM order. */
  readonly features: readonly FeatureRequest[];
  private readonly slopes: Float64Array;
  private readonly intercepts: Float64Array;
  private readonly linear: boolean;
  private readonly x: Float64Array;
  private readonly transformOn: boolean;
  private readonly clipOn: boolean;
  private readonly chroma?: { guiding: number; guided: number; parameter: number };
  /** Set where libvmaf predicts nothing with this model_dict (see Model.scoreless). */
  readonly scoreless: string | undefined;

  constructor(
    private readonly def: ModelDefinition,
    settings: PredictorSettings,
    private readonly label: string,
  ) {
    const n = def.features.length;
    this.linear = def.normType === 'linear_rescale';
    this.slopes = Float64Array.from(def.features, (f) => f.slope);
    this.intercepts = Float64Array.from(def.features, (f) => f.intercept);
    this.x = new Float64Array(n);
    this.features = def.features.map((f) => {
      let options = f.options;
      const overrides = (settings.overrides ?? []).filter((o) => extractorProviding(f.name)?.name === o.extractor);
      if (overrides.length > 0) {
        const merged = new Map(options);
        for (const o of overrides) merged.set(o.option, optionTextFromCli(o.value));
        options = merged;
      }
      return resolveModelFeature(f.name, options, label);
    });
    this.featureKeys = this.features.map((f) => f.key);
    this.transformOn = def.scoreTransform !== undefined &&
      (def.scoreTransform.enabled || settings.enableTransform === true);
    this.clipOn = def.scoreClip !== undefined && settings.disableClip !== true;
    // libvmaf's predict stops before the SVM when the parameter is present but 0, leaving
    // the frame without a score, so its pooling (and the run) fails.
    this.scoreless = def.chromaCorrectionParameter === 0
      ? `${label}: chroma_correction_parameter is 0, with which libvmaf 3.2.0 predicts no score (its run fails with "problem generating pooled VMAF score"); run with --no_prediction for the features alone, or give a non-zero parameter`
      : undefined;
    if (def.chromaCorrectionParameter !== undefined && def.chromaCorrectionParameter !== 0) {
      const find = (sub: string): number => {
        const hits = def.features.flatMap((f, i) => (f.name.includes(sub) ? [i] : []));
        if (hits.length !== 1) {
          throw new ModelError(`${label}: chroma_correction_parameter needs exactly one feature named *${sub}*, found ${hits.length}`);
        }
        return hits[0]!;
      };
      this.chroma = { guiding: find('adm3'), guided: find('speed_chroma'), parameter: def.chromaCorrectionParameter };
    }
  }

  /** Steps 1-3: the denormalised prediction, before transform and clip. */
  raw(features: FeatureValues): number {
    const x = this.x;
    const keys = this.featureKeys;
    for (let i = 0; i < keys.length; i++) {
      const v = features[keys[i]!];
      if (typeof v !== 'number') {
        throw new ModelError(`${this.label}: the frame has no feature '${keys[i]}'`);
      }
      x[i] = this.linear ? this.slopes[i]! * v + this.intercepts[i]! : v;
    }
    if (this.chroma) this.correctChroma(x, this.chroma);
    const prediction = this.def.svm.predict(x);
    return this.linear ? (prediction - this.def.intercept) / this.def.slope : prediction;
  }

  /** Steps 4-5 on a raw prediction, with this predictor's transform and clip settings. */
  finish(y: number): number {
    return this.clip(this.transform(y));
  }

  /** Steps 1-5. */
  score(features: FeatureValues): number {
    return this.finish(this.raw(features));
  }

  transform(yIn: number): number {
    if (!this.transformOn) return yIn;
    const t = this.def.scoreTransform!;
    let y: number;
    if (t.p0 !== undefined || t.p1 !== undefined || t.p2 !== undefined) {
      y = 0;
      if (t.p0 !== undefined) y += t.p0;
      if (t.p1 !== undefined) y += t.p1 * yIn;
      if (t.p2 !== undefined) y += t.p2 * yIn * yIn;
    } else {
      y = yIn;
    }
    if (t.knots !== undefined && t.knots.length >= 2) y = piecewiseLinear(y, t.knots);
    if (t.outLteIn && y > yIn) y = yIn;
    if (t.outGteIn && y < yIn) y = yIn;
    return y;
  }

  clip(y: number): number {
    if (!this.clipOn) return y;
    const { min, max } = this.def.scoreClip!;
    if (y < min) y = min;
    if (y > max) y = max;
    return y;
  }

  /**
   * The v1.0.16 models' rule: a speed_chroma feature that is exactly 0 is replaced by
   * parameter * (1 - adm3), both in unnormalised terms.
   */
  private correctChroma(x: Float64Array, c: { guiding: number; guided: number; parameter: number }): void {
    const denorm = (i: number): number =>
      this.linear ? (x[i]! - this.intercepts[i]!) / this.slopes[i]! : x[i]!;
    if (denorm(c.guided) !== 0.0) return;
    const corrected = (-c.parameter * denorm(c.guiding)) + c.parameter;
    x[c.guided] = this.linear ? this.slopes[c.guided]! * corrected + this.intercepts[c.guided]! : corrected;
  }
}

/**
 * libvmaf's piecewise-linear mapping: for each segment in turn, y on the segment's line
 * where x lies within it (later segments win at shared knots), with the first and last
 * segments extended beyond the knots.
 */
function piecewiseLinear(x: number, knots: readonly KnotPoint[]): number {
  let y = 0.0;
  const nSeg = knots.length - 1;
  for (let i = 0; i < nSeg; i++) {
    const p1 = knots[i]!;
    const p2 = knots[i + 1]!;
    const inside = p1.x <= x && x <= p2.x;
    if (p1.y === p2.y) {
      if (inside) y = p1.y;
      if (i === 0 && x < p1.x) y = p1.y;
      if (i === nSeg - 1 && x > p2.x) y = p1.y;
    } else {
      let slope: number;
      let offset: number;
      if (p1.x === 0) {
        offset = p1.y;
        slope = (p2.y - offset) / p2.x;
      } else {
        slope = (p2.y - p1.y) / (p2.x - p1.x);
        offset = p1.y - p1.x * slope;
      }
      if (inside) y = slope * x + offset;
      if (i === 0 && x < p1.x) y = slope * x + offset;
      if (i === nSeg - 1 && x > p2.x) y = slope * x + offset;
    }
  }
  return y;
}

/** A model with one model_dict: predict() gives { [name]: score }. */
export class SingleModel implements Model {
  readonly featureKeys: readonly string[];
  readonly features: readonly FeatureRequest[];
  readonly scoreless: string | undefined;

  constructor(
    readonly name: string,
    readonly version: string,
    private readonly predictor: Predictor,
  ) {
    this.featureKeys = predictor.featureKeys;
    this.features = predictor.features;
    this.scoreless = predictor.scoreless;
  }

  predict(features: FeatureValues): Record<string, number> {
    return { [this.name]: this.predictor.score(features) };
  }
}
