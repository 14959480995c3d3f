const mode = process.argv[2];
if (mode.includes('n')) { const { loadNative } = await import('./dist/kernels/native.js'); loadNative(); console.log('native loaded'); }
const { openGpuDevice } = await import('./dist/kernels/gpu/device.js');
const gpu = await openGpuDevice();
console.log('opened');
gpu.destroy();
console.log('end');
