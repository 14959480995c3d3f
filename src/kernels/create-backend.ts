import type { BackendKind, FeatureBackend } from './backend.js';
import { BackendError } from '../errors.js';
import { CpuBackend } from './cpu-backend.js';

export interface BackendOptions {
  threads: number;
  gpuAdapter?: string;
  onWarning?: (message: string) => void;
}

/**
 * Opens the requested backend. `auto` takes the gpu backend when a hardware adapter
 * exists, else the cpu backend; an explicit `gpu` also runs on a software adapter.
 */
export async function createBackend(kind: BackendKind | 'auto', options: BackendOptions): Promise<FeatureBackend> {
  switch (kind) {
    case 'cpu':
      return new CpuBackend({ threads: options.threads });
    case 'gpu':
      return openGpuBackend(options, false);
    case 'auto':
      return (await openGpuBackend(options, true)) ?? new CpuBackend({ threads: options.threads });
  }
}

async function openGpuBackend(options: BackendOptions, hardwareOnly: true): Promise<FeatureBackend | undefined>;
async function openGpuBackend(options: BackendOptions, hardwareOnly: false): Promise<FeatureBackend>;
async function openGpuBackend(_options: BackendOptions, hardwareOnly: boolean): Promise<FeatureBackend | undefined> {
  if (hardwareOnly) return undefined;
  throw new BackendError('E_GPU', 'the gpu backend is not available in this build yet; use --backend cpu');
}
