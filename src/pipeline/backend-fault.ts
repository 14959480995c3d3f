/**
 * A backend failure (the GPU lost, a kernel that failed, the native addon) says which inputs
 * and which frame it stopped the run at: the backend itself knows neither.
 *
 * The fault tests lose the GPU device on purpose, as a driver reset would, through
 * VMAF_STREAM_TEST_LOSE_GPU_AT=N (after N frames have been scored): GPUDevice.destroy() on
 * the run's real device, so the run meets a real device loss. VMAF_STREAM_TEST_HANG_GPU_AT=N
 * makes it hang instead: from then on no fence's answer is seen (GpuDevice.hangForTest), so
 * each wait ends at the GPU timeout (--gpu-timeout); =device or =compile hang it before any
 * frame instead (testDeviceHangStage). All are ignored by the cpu backend.
 */
import { BackendError, VmafError } from '../errors.js';
import type { FeatureBackend } from '../kernels/backend.js';

/** The backend's error with the inputs and the frame added; other errors as they are. */
export function backendErrorAt(error: unknown, inputs: string, frame: number): unknown {
  if (!(error instanceof VmafError) || (error.code !== 'E_GPU' && error.code !== 'E_NATIVE')) return error;
  const scored = frame > 0 ? ' (frames before it were scored)' : '';
  return new BackendError(error.code, `${inputs}: frame ${frame}: ${error.message}${scored}`, { cause: error });
}

/** After how many scored frames the test hook named by `variable` strikes, or undefined. */
function testHookAt(variable: string): number | undefined {
  const text = process.env[variable];
  if (text === undefined || !/^\d+$/.test(text)) return undefined;
  return Number(text);
}

/** After how many scored frames the test hook loses the GPU device, or undefined. */
export function testDeviceLossAt(): number | undefined {
  return testHookAt('VMAF_STREAM_TEST_LOSE_GPU_AT');
}

/** After how many scored frames the test hook hangs the GPU device, or undefined. */
export function testDeviceHangAt(): number | undefined {
  return testHookAt('VMAF_STREAM_TEST_HANG_GPU_AT');
}

/**
 * Where the test hook hangs the GPU before any frame: VMAF_STREAM_TEST_HANG_GPU_AT=device
 * (requestDevice never answers) or =compile (the kernels' compilation never answers), each
 * bounded by the GPU timeout; undefined otherwise.
 */
export function testDeviceHangStage(): 'device' | 'compile' | undefined {
  const text = process.env.VMAF_STREAM_TEST_HANG_GPU_AT;
  return text === 'device' || text === 'compile' ? text : undefined;
}

/** The test hook's device loss: destroys the gpu backend's device (nothing on other backends). */
export function loseDevice(backend: FeatureBackend): void {
  if (backend.testFault) backend.testFault('lose');
  else backend.gpuDevice?.()?.device.destroy();
}

/** The test hook's hang: the GPU's answers are no longer seen (GpuDevice.hangForTest). */
export function hangDevice(backend: FeatureBackend): void {
  if (backend.testFault) backend.testFault('hang');
  else backend.gpuDevice?.()?.hangForTest();
}
