#!/usr/bin/env node
// Builds the cpu backend's addon with AddressSanitizer and UndefinedBehaviorSanitizer into
// build-sanitize/vmaf_native.node, leaving build/ (the normal addon) alone.
//
// node-gyp always builds into ./build, so this stages the native sources (binding.gyp, src/,
// scripts/native-sources.cjs, a link to node_modules) in build-sanitize/stage and runs it
// there, with the sanitizer flags in CFLAGS/CXXFLAGS/LDFLAGS (gyp's Makefiles append them
// after binding.gyp's own flags, so -O1 wins over -O3: readable reports). Use the result with
// scripts/run-sanitized.sh (docs/sanitizers.md).
import { spawnSync } from 'node:child_process';
import { cpSync, copyFileSync, existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'build-sanitize');
const stage = join(outDir, 'stage');

rmSync(stage, { recursive: true, force: true });
mkdirSync(join(stage, 'scripts'), { recursive: true });
copyFileSync(join(root, 'binding.gyp'), join(stage, 'binding.gyp'));
copyFileSync(join(root, 'scripts', 'native-sources.cjs'), join(stage, 'scripts', 'native-sources.cjs'));
cpSync(join(root, 'src'), join(stage, 'src'), {
  recursive: true,
  // Only the C++ is compiled; the rest of src/ need not be copied.
  filter: (path) => !/\.(ts|wgsl|mjs|js|json|md)$/.test(path),
});
symlinkSync(join(root, 'node_modules'), join(stage, 'node_modules'), 'dir');

const sanitize = '-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g -O1';
const env = {
  ...process.env,
  CFLAGS: `${process.env.CFLAGS ?? ''} ${sanitize}`,
  CXXFLAGS: `${process.env.CXXFLAGS ?? ''} ${sanitize}`,
  LDFLAGS: `${process.env.LDFLAGS ?? ''} -fsanitize=address,undefined`,
};
const nodeGyp = join(root, 'node_modules', '.bin', 'node-gyp');
const gyp = existsSync(nodeGyp) ? nodeGyp : 'node-gyp';
const jobs = process.env.JOBS ?? '2';
const result = spawnSync(gyp, ['rebuild', `--jobs=${jobs}`], { cwd: stage, env, stdio: 'inherit' });
if (result.status !== 0) {
  process.stderr.write(`build-native-sanitize: node-gyp failed (${result.status ?? result.signal})\n`);
  process.exit(1);
}
copyFileSync(join(stage, 'build', 'Release', 'vmaf_native.node'), join(outDir, 'vmaf_native.node'));
process.stdout.write(`built ${join(outDir, 'vmaf_native.node')}\nrun with: scripts/run-sanitized.sh npx mocha ...\n`);
