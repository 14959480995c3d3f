// Writes a libvmaf JSON model as the .pkl + .pkl.model pair that libvmaf 1.x (the libvmaf
// filter of older ffmpeg builds) loads, so that no file from Netflix's repository is needed.
//
// libvmaf 1.x reads the .pkl with PicklingTools' protocol-0 loader (LoadValFromFile(...,
// SERIALIZE_P0)) and looks up, under model["model_dict"]: model_type ('LIBSVMNUSVR'),
// feature_names (a list of 'VMAF_feature_<name>_score'), norm_type ('linear_rescale' or
// 'none'), slopes and intercepts (lists: [0] for the score, [j+1] for feature j),
// score_clip (a list or None) and score_transform (a dict or None). The libsvm model itself
// is read from `<model_path>.model` with libsvm's svm_load_model. The pickle written here is
// what Python 2's pickle.dump(obj, f, 0) writes (S'..' strings, F floats, (dp/(lp with s/a),
// without the memo (PUT) opcodes, which a loader does not need.
import { readFileSync, writeFileSync } from 'node:fs';

/** Python 2 protocol-0 pickle of a JSON-like value. */
export function pickleP0(value) {
  const out = [];
  const emit = (v) => {
    if (v === null || v === undefined) out.push('N');
    else if (typeof v === 'boolean') out.push(v ? 'I01\n' : 'I00\n');
    else if (typeof v === 'number') {
      if (!Number.isFinite(v)) throw new Error(`cannot pickle ${v}`);
      out.push(`F${pyFloat(v)}\n`);
    } else if (typeof v === 'string') out.push(`S${pyStr(v)}\n`);
    else if (Array.isArray(v)) {
      out.push('(l');
      for (const item of v) {
        emit(item);
        out.push('a');
      }
    } else if (typeof v === 'object') {
      out.push('(d');
      for (const [k, item] of Object.entries(v)) {
        emit(k);
        emit(item);
        out.push('s');
      }
    } else throw new Error(`cannot pickle a ${typeof v}`);
  };
  emit(value);
  out.push('.');
  return out.join('');
}

/** Python's repr of a float: shortest round-trip digits, always with a '.' or an exponent. */
function pyFloat(v) {
  let s = String(v); // shortest round-trip, like Python's repr
  if (/e/.test(s)) s = s.replace(/e([+-])(\d)$/, 'e$10$2'); // 1e-7 -> 1e-07 (cosmetic)
  else if (!s.includes('.')) s += '.0';
  return s;
}

/** Python 2's repr of a byte string (ASCII only). */
function pyStr(s) {
  if (!/^[\x20-\x7e]*$/.test(s)) throw new Error(`cannot pickle the non-ASCII string ${JSON.stringify(s)}`);
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, '\\\\').replace(quote === "'" ? /'/g : /"/g, `\\${quote}`);
  return quote + body + quote;
}

/**
 * The libvmaf 1.x form of a libvmaf JSON model: libvmaf 3's integer feature names
 * (VMAF_integer_feature_adm2_score) become the 1.x float ones (VMAF_feature_adm2_score).
 */
export function toLegacyModel(json) {
  const md = json.model_dict;
  if (md.model_type !== 'LIBSVMNUSVR') throw new Error(`only LIBSVMNUSVR models can be converted, not ${md.model_type}`);
  const legacyName = (n) => n.replace(/^VMAF_integer_feature_/, 'VMAF_feature_');
  const featureDict = {};
  for (const [extractor, names] of Object.entries(md.feature_dict ?? {})) featureDict[extractor.replace(/^VMAF_integer_feature$/, 'VMAF_feature')] = names;
  const modelDict = {
    model_type: md.model_type,
    norm_type: md.norm_type,
    feature_names: md.feature_names.map(legacyName),
    slopes: md.slopes ?? null,
    intercepts: md.intercepts ?? null,
    score_clip: md.score_clip ?? null,
    score_transform: md.score_transform ?? null,
    feature_dict: featureDict,
    model: null, // libsvm's text lives in <model>.pkl.model
  };
  return { pickle: pickleP0({ param_dict: json.param_dict ?? {}, model_dict: modelDict }), libsvm: md.model };
}

/** Writes `<pklPath>` and `<pklPath>.model` from the JSON model at `jsonPath`. */
export function writeLegacyModel(jsonPath, pklPath) {
  const { pickle, libsvm } = toLegacyModel(JSON.parse(readFileSync(jsonPath, 'utf8')));
  writeFileSync(pklPath, pickle, 'latin1');
  writeFileSync(`${pklPath}.model`, libsvm.endsWith('\n') ? libsvm : `${libsvm}\n`);
  return pklPath;
}
