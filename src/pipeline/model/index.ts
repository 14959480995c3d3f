/** VMAF models: loading libvmaf's model files and scoring frames' features with them. */
export { parseModelSpec, type ModelSpec, type FeatureOverride } from './model-spec.js';
export type { Model } from './model.js';
export { loadModel, buildModel, BUILTIN_MODELS, DEFAULT_MODEL_NAME, DEFAULT_MODEL_VERSION } from './load.js';
export { BootstrapModel, BOOTSTRAP_SUFFIXES } from './bootstrap.js';
export { parseModelFile, type ModelFile, type ModelDefinition } from './model-file.js';
export { expGlibc } from './exp.js';
