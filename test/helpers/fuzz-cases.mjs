// The fuzzer's cases and its judge, shared by test/fuzz.test.mjs (seeded, bounded) and
// scripts/fuzz.mjs (npm run fuzz -- --minutes N). A case is a command line for the real CLI
// plus the files it reads; the judge runs bin/vmaf-stream as a child process and accepts
// only a valid log (exit 0) or a clear error (exit 1 or 2, "vmaf-stream: ..." naming the
// input). Everything else -- a signal, another exit status, a sanitizer report, a V8 stack
// trace, an unhandled rejection, a timeout, an ffmpeg child still alive after the CLI
// exited -- is a failure, and the case is kept under test/fuzz-corpus/ for replay.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/vmaf-stream', import.meta.url));
export const CORPUS_DIR = fileURLToPath(new URL('../fuzz-corpus', import.meta.url));
const BUILTIN_MODEL = fileURLToPath(new URL('../../src/pipeline/model/builtin/vmaf_v0.6.1.json', import.meta.url));

export const CASE_KINDS = ['y4m-header', 'y4m-data', 'raw', 'compressed', 'model', 'options'];

/** mulberry32: small, seedable, the same sequence on every machine. */
export function createRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    pick: (list) => list[Math.floor(next() * list.length)],
    chance: (p) => next() < p,
  };
}

// ---------------------------------------------------------------- inputs

const CHROMA = {
  '420': { sx: 1, sy: 1 },
  '422': { sx: 1, sy: 0 },
  '444': { sx: 0, sy: 0 },
};

/** A y4m header tag for a format: C420jpeg, C422p10, ... */
function chromaTag(format, bitDepth) {
  if (bitDepth === 8) return format === '420' ? 'C420jpeg' : `C${format}`;
  return `C${format}p${bitDepth}`;
}

/** One frame's planes as bytes: smooth gradients plus noise, so the features are not trivial. */
function frameBytes(rng, width, height, format, bitDepth, frame) {
  const { sx, sy } = CHROMA[format];
  const cw = (width + sx) >> sx;
  const ch = (height + sy) >> sy;
  const bytesPerSample = bitDepth > 8 ? 2 : 1;
  const max = (1 << bitDepth) - 1;
  const samples = width * height + 2 * cw * ch;
  const out = Buffer.alloc(samples * bytesPerSample);
  let i = 0;
  const put = (v) => {
    const s = Math.max(0, Math.min(max, Math.round(v)));
    if (bytesPerSample === 2) out.writeUInt16LE(s, 2 * i++);
    else out[i++] = s;
  };
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) put((((x * 3 + y * 5 + frame * 7) % 64) / 64 + rng.next() * 0.3) * max * 0.7);
  for (let p = 0; p < 2; p++) for (let y = 0; y < ch; y++) for (let x = 0; x < cw; x++) put(max / 2 + (rng.next() - 0.5) * max * 0.2);
  return out;
}

export function y4mFile(rng, { width, height, format = '420', bitDepth = 8, frames = 3, header }) {
  const head = header ?? `YUV4MPEG2 W${width} H${height} F25:1 Ip A1:1 ${chromaTag(format, bitDepth)}`;
  const parts = [Buffer.from(`${head}\n`)];
  for (let f = 0; f < frames; f++) parts.push(Buffer.from('FRAME\n'), frameBytes(rng, width, height, format, bitDepth, f));
  return Buffer.concat(parts);
}

function rawFile(rng, { width, height, format, bitDepth, frames }) {
  const parts = [];
  for (let f = 0; f < frames; f++) parts.push(frameBytes(rng, width, height, format, bitDepth, f));
  return Buffer.concat(parts);
}

/** Byte-level damage: flips, zeroed or repeated runs, cuts and insertions. */
function damage(rng, buffer, { keepHead = 0 } = {}) {
  let b = Buffer.from(buffer);
  const edits = rng.int(1, 6);
  for (let e = 0; e < edits && b.length > keepHead; e++) {
    const at = rng.int(keepHead, b.length - 1);
    switch (rng.int(0, 5)) {
      case 0: // a few random bytes
        for (let k = rng.int(1, 16); k > 0; k--) b[rng.int(keepHead, b.length - 1)] = rng.int(0, 255);
        break;
      case 1: // a run zeroed
        b.fill(0, at, Math.min(b.length, at + rng.int(1, 512)));
        break;
      case 2: // a run of 0xff
        b.fill(0xff, at, Math.min(b.length, at + rng.int(1, 512)));
        break;
      case 3: // cut short
        b = b.subarray(0, at);
        break;
      case 4: // bytes cut out of the middle
        b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + rng.int(1, 256)))]);
        break;
      default: // garbage inserted
        b = Buffer.concat([b.subarray(0, at), Buffer.from(Array.from({ length: rng.int(1, 64) }, () => rng.int(0, 255))), b.subarray(at)]);
    }
  }
  return b;
}

const ODD_NUMBERS = ['0', '-1', '-48', '1', '2', '3', '7', '15', '16', '17', '65535', '65536', '2147483647', '4294967297', '99999999999999999999', '1e3', '0x20', '32.5', 'NaN', 'Infinity', '', ' ', 'abc', '08', '+32', '1_000'];

function sizeLike(rng) {
  return rng.chance(0.5) ? String(rng.int(1, 96)) : rng.pick(ODD_NUMBERS);
}

/** A y4m header with one or more tokens mutated. */
function mutatedY4mHeader(rng, width, height, format, bitDepth) {
  const tokens = ['YUV4MPEG2', `W${width}`, `H${height}`, 'F25:1', 'Ip', 'A1:1', chromaTag(format, bitDepth)];
  const edits = rng.int(1, 3);
  for (let e = 0; e < edits; e++) {
    const i = rng.int(0, tokens.length - 1);
    switch (rng.int(0, 9)) {
      case 0: tokens.splice(i, 1); break;
      case 1: tokens[i] = `W${sizeLike(rng)}`; break;
      case 2: tokens[i] = `H${sizeLike(rng)}`; break;
      case 3: tokens[i] = `F${rng.pick(['0:0', '25:0', '0:1', '-25:1', '30000:1001', 'x', '1:', '999999999999:1', ''])}`; break;
      case 4: tokens[i] = `C${rng.pick(['420', '420p10', '420p12', '420p16', '422p10', '444p12', 'mono', 'mono16', '411', '420paldv', '420mpeg2', '444alpha', 'foo', '420p9', '420p0', ''])}`; break;
      case 5: tokens[i] = `I${rng.pick(['t', 'b', 'm', '?', 'x', ''])}`; break;
      case 6: tokens.push(`X${rng.pick(['COLORRANGE=FULL', 'YSCSS=420P10', 'a'.repeat(rng.int(1, 3000)), ''])}`); break;
      case 7: tokens.splice(i, 0, tokens[i]); break; // a duplicated token
      case 8: tokens[0] = rng.pick(['YUV4MPEG', 'YUV4MPEG3', 'yuv4mpeg2', 'YUV4MPEG2\0', '']); break;
      default: tokens[i] = `${tokens[i]}${rng.pick(['\t', '  ', '\r', 'x', '\0'])}`;
    }
  }
  return tokens.join(rng.chance(0.9) ? ' ' : rng.pick(['  ', '\t']));
}

function pickGeometry(rng) {
  const format = rng.pick(['420', '420', '422', '444']);
  const bitDepth = rng.pick([8, 8, 10, 12]);
  // Mostly at or above the smallest size scored (33), so the damage reaches the kernels.
  const small = rng.chance(0.15);
  const width = small ? rng.int(1, 40) : rng.int(33, 80);
  const height = small ? rng.int(1, 40) : rng.int(33, 60);
  return { width, height, format, bitDepth, frames: rng.int(1, 3) };
}

// ---------------------------------------------------------------- case kinds

function y4mHeaderCase(rng) {
  const g = pickGeometry(rng);
  const header = mutatedY4mHeader(rng, g.width, g.height, g.format, g.bitDepth);
  const broken = y4mFile(rng, { ...g, header });
  const good = y4mFile(rng, g);
  const brokenIsRef = rng.chance(0.5);
  return {
    kind: 'y4m-header',
    description: `y4m header ${JSON.stringify(header)} (${brokenIsRef ? 'ref' : 'dis'})`,
    files: { 'ref.y4m': brokenIsRef ? broken : good, 'dis.y4m': brokenIsRef ? good : broken },
    args: ['-r', '{dir}/ref.y4m', '-d', '{dir}/dis.y4m'],
    inputs: ['ref.y4m', 'dis.y4m'],
  };
}

function y4mDataCase(rng) {
  const g = pickGeometry(rng);
  const ref = y4mFile(rng, g);
  let dis;
  let what;
  switch (rng.int(0, 4)) {
    case 0: {
      // samples above the bit depth's range: a high-bit-depth file whose words are random
      const header = `YUV4MPEG2 W${g.width} H${g.height} F25:1 Ip A1:1 ${chromaTag(g.format, g.bitDepth === 8 ? 10 : g.bitDepth)}\n`;
      const body = Buffer.from(ref.subarray(ref.indexOf(10) + 1));
      const { sx, sy } = CHROMA[g.format];
      const frameSize = 2 * (g.width * g.height + 2 * ((g.width + sx) >> sx) * ((g.height + sy) >> sy));
      const parts = [Buffer.from(header)];
      for (let f = 0; f < g.frames; f++) {
        const data = Buffer.alloc(frameSize);
        for (let k = 0; k < frameSize; k++) data[k] = rng.chance(0.5) ? 0xff : rng.int(0, 255);
        parts.push(Buffer.from('FRAME\n'), data);
      }
      void body;
      dis = Buffer.concat(parts);
      what = 'samples outside the bit depth';
      if (rng.chance(0.5)) return { kind: 'y4m-data', description: `${what} (both)`, files: { 'ref.y4m': dis, 'dis.y4m': dis }, args: ['-r', '{dir}/ref.y4m', '-d', '{dir}/dis.y4m'], inputs: ['ref.y4m', 'dis.y4m'] };
      return { kind: 'y4m-data', description: what, files: { 'ref.y4m': dis, 'dis.y4m': y4mFile(rng, { ...g, bitDepth: g.bitDepth === 8 ? 10 : g.bitDepth }) }, args: ['-r', '{dir}/ref.y4m', '-d', '{dir}/dis.y4m'], inputs: ['ref.y4m', 'dis.y4m'] };
    }
    case 1:
      dis = damage(rng, ref, { keepHead: ref.indexOf(10) + 1 });
      what = 'damaged frame data';
      break;
    case 2: {
      // FRAME markers with parameters or misspelled
      const marker = rng.pick(['FRAME Ixyz\n', 'FRAM\n', 'FRAME', 'FRAME\r\n', 'FRAME ' + 'x'.repeat(rng.int(1, 5000)) + '\n', 'frame\n', '\n']);
      const s = ref.toString('latin1');
      const nth = rng.int(0, g.frames - 1);
      let at = -1;
      for (let k = 0; k <= nth; k++) at = s.indexOf('FRAME\n', at + 1);
      dis = Buffer.concat([ref.subarray(0, at), Buffer.from(marker, 'latin1'), ref.subarray(at + 6)]);
      what = `frame ${nth} marker ${JSON.stringify(marker.slice(0, 20))}`;
      break;
    }
    case 3: {
      const other = { ...g, width: g.width + rng.pick([-2, -1, 1, 2, 16]), height: g.height + rng.pick([0, 1, -1]), bitDepth: rng.pick([8, 10, 12]), format: rng.pick(['420', '422', '444']) };
      if (other.width < 1) other.width = 1;
      if (other.height < 1) other.height = 1;
      dis = y4mFile(rng, other);
      what = `dis ${other.width}x${other.height} ${other.format} ${other.bitDepth}-bit against ref ${g.width}x${g.height} ${g.format} ${g.bitDepth}-bit`;
      break;
    }
    default:
      dis = ref.subarray(0, rng.int(0, ref.length));
      what = `truncated to ${dis.length} of ${ref.length} bytes`;
  }
  const swap = rng.chance(0.3);
  return {
    kind: 'y4m-data',
    description: `${what}${swap ? ' (as ref)' : ''}`,
    files: { 'ref.y4m': swap ? dis : ref, 'dis.y4m': swap ? ref : dis },
    args: ['-r', '{dir}/ref.y4m', '-d', '{dir}/dis.y4m'],
    inputs: ['ref.y4m', 'dis.y4m'],
  };
}

function rawCase(rng) {
  const g = pickGeometry(rng);
  const data = rawFile(rng, g);
  const frameBytesCount = data.length / g.frames;
  let file = data;
  const lengthEdit = rng.int(0, 4);
  if (lengthEdit === 1) file = data.subarray(0, Math.max(0, data.length - rng.int(1, frameBytesCount)));
  else if (lengthEdit === 2) file = Buffer.concat([data, Buffer.alloc(rng.int(1, 9))]);
  else if (lengthEdit === 3) file = Buffer.alloc(0);
  const opt = (good, odd) => (rng.chance(0.75) ? String(good) : odd());
  const w = opt(g.width, () => sizeLike(rng));
  const h = opt(g.height, () => sizeLike(rng));
  const p = opt(g.format, () => rng.pick(['420', '422', '444', '400', 'yuv420p', '420p', '', 'x', '411']));
  const b = opt(g.bitDepth, () => rng.pick(['8', '9', '10', '12', '14', '16', '0', '32', '-8', 'x']));
  const sameFile = rng.chance(0.5);
  return {
    kind: 'raw',
    description: `raw ${g.width}x${g.height} ${g.format} ${g.bitDepth}-bit, ${file.length} bytes, -w ${w} -h ${h} -p ${p} -b ${b}`,
    files: { 'ref.yuv': data, 'dis.yuv': sameFile ? file : file },
    args: ['-r', '{dir}/ref.yuv', '-d', '{dir}/dis.yuv', '-w', w, '-h', h, '-p', p, '-b', b],
    inputs: ['ref.yuv', 'dis.yuv'],
  };
}

/** Small compressed streams made once per work folder with the given ffmpeg, to be damaged. */
export function prepareCompressedBases(ffmpeg, dir) {
  mkdirSync(dir, { recursive: true });
  const specs = [
    { name: 'h264.mp4', args: ['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '4', '-pix_fmt', 'yuv420p'] },
    { name: 'h264.mkv', args: ['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '4', '-pix_fmt', 'yuv420p10le'] },
    { name: 'mpeg4.avi', args: ['-c:v', 'mpeg4', '-g', '3', '-pix_fmt', 'yuv420p'] },
    { name: 'mjpeg.mkv', args: ['-c:v', 'mjpeg', '-pix_fmt', 'yuvj422p'] },
    { name: 'vp9.webm', args: ['-c:v', 'libvpx-vp9', '-deadline', 'realtime', '-cpu-used', '8', '-pix_fmt', 'yuv444p'] },
    { name: 'ffv1.nut', args: ['-c:v', 'ffv1', '-pix_fmt', 'yuv422p12le'] },
  ];
  const made = [];
  for (const spec of specs) {
    const out = join(dir, spec.name);
    if (!existsSync(out)) {
      const r = spawnSync(ffmpeg, ['-v', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=64x48:rate=10:duration=0.6', ...spec.args, out], { timeout: 60000 });
      if (r.status !== 0) continue;
    }
    made.push({ name: spec.name, data: readFileSync(out) });
  }
  // An elementary stream whose size and chroma format change midway (two streams end to end).
  const parts = [];
  for (const [size, pixFmt] of [['64x48', 'yuv420p'], ['96x72', 'yuv444p']]) {
    const out = join(dir, `part-${size}.h264`);
    if (!existsSync(out)) spawnSync(ffmpeg, ['-v', 'error', '-y', '-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=10:duration=0.5`, '-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', pixFmt, out], { timeout: 60000 });
    if (existsSync(out)) parts.push(readFileSync(out));
  }
  if (parts.length === 2) made.push({ name: 'switch.h264', data: Buffer.concat(parts) });
  return made;
}

function compressedCase(rng, bases) {
  const base = rng.pick(bases);
  const ext = base.name.slice(base.name.indexOf('.'));
  // The first bytes are often left whole so the container is recognised and the damage reaches the decoder.
  const keepHead = rng.chance(0.6) ? Math.min(base.data.length - 1, rng.int(16, 600)) : 0;
  const dis = damage(rng, base.data, { keepHead });
  const refIsBase = rng.chance(0.7);
  return {
    kind: 'compressed',
    description: `${base.name} with damaged bytes (${dis.length} of ${base.data.length} bytes)${refIsBase ? '' : ', as both inputs'}`,
    files: { [`ref${ext}`]: refIsBase ? base.data : dis, [`dis${ext}`]: dis },
    args: ['-r', `{dir}/ref${ext}`, '-d', `{dir}/dis${ext}`],
    inputs: [`ref${ext}`, `dis${ext}`],
  };
}

const ODD_JSON_VALUES = ['NaN', 'Infinity', '-Infinity', '1e308', '1e309', '-1e309', '-1', '0', '1e-320', '"x"', 'null', 'true', '[]', '{}', '[1,2,3]', '[[1]]', '"NaN"', '9007199254740993', '[' + '1,'.repeat(200) + '1]', '"' + 'a'.repeat(500) + '"'];

function modelCase(rng, good) {
  let text = readFileSync(BUILTIN_MODEL, 'utf8');
  const model = JSON.parse(text);
  let what;
  switch (rng.int(0, 5)) {
    case 0: {
      // a value replaced somewhere in the tree, as text so NaN and 1e309 survive
      const paths = [];
      const walk = (node, path) => {
        if (path.length) paths.push(path);
        if (node && typeof node === 'object') for (const [k, v] of Object.entries(node)) if (paths.length < 5000) walk(v, [...path, k]);
      };
      walk(model, []);
      const marker = '"__FUZZ_VALUE__"';
      const edits = rng.int(1, 3);
      const chosen = [];
      for (let e = 0; e < edits; e++) {
        const path = rng.pick(paths.filter((p) => !p.includes('sv_coef') || rng.chance(0.05)).length ? paths : paths);
        let node = model;
        for (const k of path.slice(0, -1)) node = node[k];
        if (node && typeof node === 'object') {
          node[path[path.length - 1]] = '__FUZZ_VALUE__';
          chosen.push(path.join('.'));
        }
      }
      text = JSON.stringify(model);
      const values = [];
      while (text.includes(marker)) {
        const v = rng.pick(ODD_JSON_VALUES);
        values.push(v);
        text = text.replace(marker, v);
      }
      what = `${chosen.join(', ')} = ${values.map((v) => v.slice(0, 20)).join(', ')}`;
      break;
    }
    case 1: {
      const feats = model.model_dict.feature_names;
      const i = rng.int(0, feats.length - 1);
      feats[i] = rng.pick(['VMAF_feature_bogus_score', 'float_ssim', 'psnr_y', 'integer_adm2', '', 'VMAF_integer_feature_vif_scale9_score', 'cambi']);
      if (rng.chance(0.3)) feats.push('VMAF_feature_adm2_score');
      if (rng.chance(0.3)) feats.pop();
      text = JSON.stringify(model);
      what = `feature_names ${JSON.stringify(feats)}`;
      break;
    }
    case 2: {
      const d = model.model_dict;
      const key = rng.pick(['slopes', 'intercepts', 'feature_names', 'norm_type', 'model_type', 'score_transform', 'score_clip', 'model', 'feature_opts_dicts']);
      if (rng.chance(0.5)) delete d[key];
      else if (Array.isArray(d[key])) d[key] = d[key].slice(0, rng.int(0, d[key].length + 2));
      else d[key] = rng.pick([null, 1, 'x', [], {}, 'linear_rescale', 'none', 'LIBSVMNUSVR', 'BOOTSTRAP_LIBSVMNUSVR', [0, 1e308]]);
      text = JSON.stringify(model);
      what = `model_dict.${key} ${key in d ? `= ${JSON.stringify(d[key])?.slice(0, 40)}` : 'deleted'}`;
      break;
    }
    case 3: {
      // the embedded libsvm model text damaged
      const d = model.model_dict;
      const lines = String(d.model).split('\n');
      const i = rng.int(0, Math.min(lines.length - 1, 12));
      lines[i] = rng.pick(['', 'total_sv -5', 'total_sv 999999999', 'nr_class x', 'SV', 'rho NaN', 'svm_type foo', 'kernel_type linear', 'gamma 1e309', lines[i].replace(/[0-9]/g, '9'), `${lines[i]} 1:nan 2:inf`]);
      if (rng.chance(0.3)) lines.splice(rng.int(10, lines.length - 1), rng.int(1, 40));
      d.model = lines.join('\n');
      text = JSON.stringify(model);
      what = `svm model line ${i} = ${JSON.stringify(lines[i]).slice(0, 40)}`;
      break;
    }
    case 4:
      text = damage(rng, Buffer.from(text)).toString('latin1');
      what = 'damaged bytes';
      break;
    default:
      text = rng.pick(['', '{}', '[]', 'null', '{"model_dict":null}', '{"model_dict":{}}', '[' .repeat(20000), '{"model_dict":' + '{"a":'.repeat(5000)]);
      what = `text ${JSON.stringify(text.slice(0, 30))}`;
  }
  void good;
  const spec = `path={dir}/model.json${rng.chance(0.3) ? ':name=m' : ''}${rng.chance(0.2) ? ':enable_transform' : ''}${rng.chance(0.2) ? ':disable_clip' : ''}`;
  return {
    kind: 'model',
    description: `model ${what}`,
    files: { 'model.json': Buffer.from(text, 'latin1') },
    args: ['-r', '{good}/ref.y4m', '-d', '{good}/dis.y4m', '-m', spec],
    inputs: ['model.json'],
  };
}

const FEATURES = ['psnr', 'float_ssim', 'float_ms_ssim', 'ciede', 'psnr_hvs', 'float_psnr', 'float_vif', 'float_adm', 'float_motion', 'float_ansnr', 'float_moment', 'integer_adm', 'integer_vif', 'integer_motion', 'adm', 'vif', 'motion', 'cambi', 'bogus', ''];
const FEATURE_OPTS = ['enable_db', 'clip_db', 'enable_chroma', 'enable_apsnr', 'min_sse', 'motion_force_zero', 'motion_blend_factor', 'adm_enhn_gain_limit', 'adm_csf_mode', 'adm_norm_view_dist', 'adm_ref_display_height', 'vif_enhn_gain_limit', 'vif_kernelscale', 'debug', 'enable_lcs', 'scale', 'motion_five_frame_window', 'bogus', ''];
const OPT_VALUES = ['true', 'false', '1', '0', '-1', '0.5', '1e309', 'NaN', '', 'x', '100', '101', '3', '4', '9999', '0.75', '24', '2.5', '1e-9', '=', ':'];

const PLAUSIBLE_FEATURES = ['psnr', 'psnr=enable_chroma=false', 'psnr=enable_apsnr=true:min_sse=0.5', 'float_ssim=enable_lcs=true', 'float_ssim=enable_db=true:clip_db=true', 'float_ssim=scale=2', 'ciede', 'psnr_hvs', 'float_psnr', 'float_moment', 'float_ansnr', 'float_motion=motion_force_zero=true', 'float_vif=vif_kernelscale=0.5', 'float_vif=vif_kernelscale=4', 'float_adm=adm_enhn_gain_limit=1', 'adm=adm_csf_mode=1', 'adm=adm_norm_view_dist=0.75:adm_ref_display_height=4320', 'vif=vif_enhn_gain_limit=1', 'motion=motion_five_frame_window=true', 'float_ms_ssim=enable_lcs=true'];

function featureArg(rng) {
  if (rng.chance(0.5)) return rng.pick(PLAUSIBLE_FEATURES);
  let s = rng.pick(FEATURES);
  const n = rng.int(0, 3);
  for (let i = 0; i < n; i++) s += `${i === 0 ? '=' : ':'}${rng.pick(FEATURE_OPTS)}=${rng.pick(OPT_VALUES)}`;
  if (rng.chance(0.1)) s += rng.pick(['=', ':', '::', '=a=b', ':x']);
  return s;
}

function modelArg(rng) {
  const parts = [];
  const n = rng.int(1, 4);
  for (let i = 0; i < n; i++) {
    parts.push(rng.pick([
      `version=${rng.pick(['vmaf_v0.6.1', 'vmaf_v0.6.1neg', 'vmaf_4k_v0.6.1', 'vmaf_b_v0.6.3', 'vmaf_float_v0.6.1', 'nope', ''])}`,
      `name=${rng.pick(['vmaf', 'a', '', 'a:b', 'frames', 'x'.repeat(300), 'integer_adm2'])}`,
      'enable_transform', 'disable_clip', 'enable_transform=true', 'disable_clip=0', 'bogus=1', '=', '',
      'path=/nonexistent/model.json', 'path={dir}',
    ]));
  }
  return parts.join(':');
}

function alertArg(rng) {
  const metric = rng.pick(['vmaf', 'psnr_y', 'integer_adm2', 'nope', '', 'vmaf_neg', 'a:vmaf', 'dis:vmaf']);
  const cmp = rng.pick(['<', '<=', '>', '>=', '=', '<<', '']);
  const num = rng.pick(['60', '-1', '1e309', 'NaN', '', 'x', '0.5', '100']);
  const span = () => rng.pick(['0.5s', '2s', '10f', '0f', '-1f', '1e9s', 'x', '', '500ms', '0ms', '3']);
  return rng.pick([
    `${metric}${cmp}${num}`,
    `${metric}${cmp}${num} for ${span()}`,
    `${rng.pick(['mean', 'min', 'max', 'harmonic_mean', 'p5', 'p0', 'p100', 'p101', 'p-1', 'median', ''])}(${metric})${cmp}${num} over ${span()}${rng.chance(0.5) ? ` for ${span()}` : ''}`,
    `${metric}${cmp}${num} over`,
    'for 2s',
    '',
  ]);
}

function spanArg(rng) {
  return rng.pick(['60f', '2s', '500ms', '0f', '0s', '1f', '-5f', '1e400s', 'x', '', '10', '0.001ms', '3.5f', '9999999999f', '1.5s']);
}

function distortedArg(rng) {
  const parts = [];
  const n = rng.int(0, 3);
  for (let i = 0; i < n; i++) {
    parts.push(rng.pick([
      `name=${rng.pick(['a', '', 'a b', '{name}', 'x'.repeat(200), 'vmaf', '../x'])}`,
      `skip=${rng.pick(['0', '1', '-1', '99', 'x', '', '1e3'])}`,
      `align=${rng.pick(['auto', '0', '1', '-1', '99', 'x', ''])}`,
      'bogus=1', '',
    ]));
  }
  parts.push(`path=${rng.pick(['{good}/dis.y4m', '{good}/dis.y4m', '', '{good}', '/nonexistent.y4m', '{good}/dis.y4m:extra'])}`);
  return rng.chance(0.85) ? parts.join(':') : parts.slice(0, -1).join(':');
}

function optionsCase(rng) {
  const args = ['-r', '{good}/ref.y4m'];
  let hasDistorted = false;
  const n = rng.int(1, 3);
  for (let i = 0; i < n; i++) {
    switch (rng.int(0, 9)) {
      case 0: case 1: args.push('--feature', featureArg(rng)); break;
      case 2: args.push('-m', modelArg(rng)); break;
      case 3: args.push('--alert', alertArg(rng)); break;
      case 4: args.push('--window', spanArg(rng)); if (rng.chance(0.5)) args.push('--window-hop', spanArg(rng)); break;
      case 5: args.push('-d', distortedArg(rng)); hasDistorted = true; break;
      case 6: args.push(rng.pick(['--threads', '--frame_cnt', '--subsample', '--frame_skip_ref', '--frame_skip_dist', '--precision', '--align-range']), rng.pick(ODD_NUMBERS)); break;
      case 7: args.push('--window-percentile', rng.pick(['5', '0', '100', '101', '-1', 'x', '5,50', '', 'NaN'])); break;
      case 8: args.push('--align', rng.pick(['auto', '0', '2', '-2', 'x', '', '99999'])); break;
      default: args.push(rng.pick(['--aom_ctc', '--nflx_ctc']), rng.pick(['v1.0', 'v3.0', 'v6.0', 'v7.0', 'v8.0', '', 'x']));
    }
  }
  if (!hasDistorted || rng.chance(0.3)) args.push('-d', '{good}/dis.y4m');
  // Windows and alerts are logged in NDJSON only: mostly ask for it, so they get used.
  const ndjson = args.some((a) => a.startsWith('--window') || a === '--alert') && rng.chance(0.8);
  return { kind: 'options', description: `options ${JSON.stringify(args.slice(2))}`, files: {}, args, inputs: [], ...(ndjson ? { format: 'ndjson' } : {}) };
}

/** The good inputs option and model cases point at ({good}): a small valid pair. */
export function prepareGoodPair(dir) {
  mkdirSync(dir, { recursive: true });
  const rng = createRng(12345);
  const g = { width: 48, height: 36, format: '420', bitDepth: 8, frames: 3 };
  writeFileSync(join(dir, 'ref.y4m'), y4mFile(rng, g));
  writeFileSync(join(dir, 'dis.y4m'), y4mFile(rng, g));
}

/**
 * The case number `index` of a run seeded `seed`: the same on every machine (the kind cycles
 * so a short run still covers each kind). `bases` are the compressed streams to damage.
 */
export function generateCase(seed, index, bases) {
  const rng = createRng((seed * 1000003 + index * 7919) >>> 0);
  const kinds = bases.length ? CASE_KINDS : CASE_KINDS.filter((k) => k !== 'compressed');
  const kind = kinds[index % kinds.length];
  const c = (() => {
    switch (kind) {
      case 'y4m-header': return y4mHeaderCase(rng);
      case 'y4m-data': return y4mDataCase(rng);
      case 'raw': return rawCase(rng);
      case 'compressed': return compressedCase(rng, bases);
      case 'model': return modelCase(rng);
      default: return optionsCase(rng);
    }
  })();
  // The log's format varies too: each writer must survive what the inputs do to the values.
  const format = rng.pick(['json', 'json', 'ndjson', 'xml', 'csv']);
  c.format ??= format;
  c.name = `s${seed}-${index}-${kind}`;
  return c;
}

// ---------------------------------------------------------------- the judge

const CRASH_PATTERNS = [
  [/Segmentation fault|SIGSEGV/, 'segmentation fault'],
  [/\bAbort(ed)?\b|SIGABRT|core dumped/, 'abort'],
  [/AddressSanitizer|LeakSanitizer/, 'AddressSanitizer report'],
  [/runtime error:/, 'UndefinedBehaviorSanitizer report'],
  [/UnhandledPromiseRejection|unhandled promise rejection|Unhandled 'error' event/i, 'unhandled rejection or error event'],
  [/internal error/, 'internal error (an unexpected exception)'],
  [/\n\s+at .+\(.*:\d+:\d+\)/, 'a V8 stack trace'],
  [/FATAL ERROR|Fatal error in|JavaScript heap out of memory/, 'V8 fatal error'],
];

/** The processes (pid, command line) whose command line mentions `marker` or whose group is `pgid`. */
function processesOf(pgid, marker) {
  const found = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const state = fields[0];
      if (state === 'Z') continue;
      const group = Number(fields[2]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (group === pgid || (marker && cmdline.includes(marker))) found.push({ pid: Number(entry), cmdline: cmdline.trim() });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The log at `path` in `format` is valid: parses, and has at least one scored frame. */
export function checkLog(text, format) {
  if (format === 'json') {
    const log = JSON.parse(text);
    if (!Array.isArray(log.frames) || log.frames.length === 0) throw new Error('no frames in the JSON log');
    for (const f of log.frames) if (typeof f.frameNum !== 'number' || typeof f.metrics !== 'object') throw new Error(`bad frame entry ${JSON.stringify(f).slice(0, 100)}`);
    if (typeof log.pooled_metrics !== 'object') throw new Error('no pooled_metrics');
    return log.frames.length;
  }
  if (format === 'ndjson') {
    const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const frames = lines.filter((l) => typeof l.frameNum === 'number' && l.metrics);
    if (frames.length === 0) throw new Error('no frame lines in the NDJSON log');
    return frames.length;
  }
  if (format === 'xml') {
    if (!text.startsWith('<VMAF ') || !text.trimEnd().endsWith('</VMAF>')) throw new Error('XML log not complete');
    const frames = (text.match(/<frame /g) ?? []).length;
    if (frames === 0) throw new Error('no frames in the XML log');
    return frames;
  }
  const rows = text.split('\n').filter(Boolean);
  if (rows.length < 2 || !rows[0].startsWith('Frame,')) throw new Error('CSV log without header or rows');
  const width = rows[0].split(',').length;
  for (const row of rows.slice(1)) if (row.split(',').length !== width) throw new Error(`CSV row of another width: ${row.slice(0, 80)}`);
  return rows.length - 1;
}

/** Writes the case's files into `dir` and returns its command line with {dir} and {good} filled in. */
export function materialize(c, dir, goodDir) {
  mkdirSync(dir, { recursive: true });
  for (const [name, data] of Object.entries(c.files)) writeFileSync(join(dir, name), data);
  const fill = (s) => s.replaceAll('{dir}', dir).replaceAll('{good}', goodDir);
  return c.args.map(fill);
}

/**
 * Runs one case; resolves to { ok, reason, status, signal, stderr, frames, ms }.
 * `backend` is cpu or gpu; `timeoutMs` bounds the run (a timeout is a hang: a failure).
 */
export async function runCase(c, { dir, goodDir, backend = 'cpu', timeoutMs = 60000, env = process.env }) {
  rmSync(dir, { recursive: true, force: true });
  const args = materialize(c, dir, goodDir);
  const logPath = join(dir, `out.${c.format}`);
  const formatFlag = { json: '--json', ndjson: '--ndjson', xml: '--xml', csv: '--csv' }[c.format];
  const full = [BIN, ...args, '--backend', backend, '-q', formatFlag, '-o', logPath];
  const started = Date.now();
  // Its own process group: whatever it starts is found by the group after it exits.
  const child = spawn(process.execPath, full, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, env });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (d) => { stdout += d; });
  child.stderr.on('data', (d) => { if (stderr.length < 200000) stderr += d; });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
  }, timeoutMs);
  const { status, signal } = await new Promise((resolve) => child.on('close', (code, sig) => resolve({ status: code, signal: sig })));
  clearTimeout(timer);
  const ms = Date.now() - started;
  const result = { ok: false, reason: '', status, signal, stderr, stdout, ms, frames: 0, args: full.slice(1) };
  // ffmpeg children must be gone when the CLI has exited (a moment for the kernel to reap).
  let leftovers = processesOf(child.pid, dir);
  for (let tries = 0; leftovers.length && tries < 10; tries++) {
    await sleep(50);
    leftovers = processesOf(child.pid, dir);
  }
  for (const p of leftovers) try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ }
  const fail = (reason) => Object.assign(result, { ok: false, reason });
  if (timedOut) return fail(`hang: no exit within ${timeoutMs} ms`);
  if (leftovers.length) return fail(`leaked children after exit: ${leftovers.map((p) => `${p.pid} ${p.cmdline.slice(0, 80)}`).join('; ')}`);
  if (signal) return fail(`killed by ${signal}`);
  for (const [pattern, what] of CRASH_PATTERNS) if (pattern.test(stderr)) return fail(what);
  if (status === 0) {
    if (!existsSync(logPath)) return fail('exit 0 without a log');
    try {
      result.frames = checkLog(readFileSync(logPath, 'utf8'), c.format);
    } catch (error) {
      return fail(`exit 0 with an invalid log: ${error.message}`);
    }
    return Object.assign(result, { ok: true, reason: 'log' });
  }
  if (status !== 1 && status !== 2) return fail(`exit status ${status}`);
  const message = stderr.split('\n').find((l) => l.startsWith('vmaf-stream: ') && !l.startsWith('vmaf-stream: warning'));
  if (!message) return fail(`exit ${status} without a "vmaf-stream: ..." message`);
  // An input's error names it (by path): the user must know which file is bad.
  if (status === 1 && c.inputs.length && !c.inputs.some((name) => stderr.includes(name))) {
    return fail(`exit 1 without naming the input: ${message}`);
  }
  return Object.assign(result, { ok: true, reason: `exit ${status}` });
}

// ---------------------------------------------------------------- the corpus

/** Keeps a failed case: test/fuzz-corpus/NAME/case.json and its files. */
export function saveCase(c, result, corpusDir = CORPUS_DIR) {
  const dir = join(corpusDir, c.name);
  mkdirSync(dir, { recursive: true });
  for (const [name, data] of Object.entries(c.files)) writeFileSync(join(dir, name), data);
  const record = { name: c.name, kind: c.kind, description: c.description, format: c.format, args: c.args, inputs: c.inputs, files: Object.keys(c.files), failure: result.reason, stderr: result.stderr.slice(0, 2000) };
  writeFileSync(join(dir, 'case.json'), `${JSON.stringify(record, null, 2)}\n`);
  return dir;
}

/** Every kept case, ready for runCase. */
export function loadCorpus(corpusDir = CORPUS_DIR) {
  if (!existsSync(corpusDir)) return [];
  return readdirSync(corpusDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(corpusDir, d.name, 'case.json')))
    .map((d) => {
      const dir = join(corpusDir, d.name);
      const record = JSON.parse(readFileSync(join(dir, 'case.json'), 'utf8'));
      const files = Object.fromEntries(record.files.map((f) => [f, readFileSync(join(dir, f))]));
      return { ...record, files, name: basename(dir) };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}
