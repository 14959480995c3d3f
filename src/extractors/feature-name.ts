/**
 * The key libvmaf logs a feature under (libvmaf's feature_name.c and alias.c): the
 * feature's short alias ("VMAF_integer_feature_adm2_score" → "integer_adm2"), then, for
 * each option that is a feature parameter and differs from its default, in alphabetical
 * order of the option's name, "_<alias>" for booleans and "_<alias>_<value>" otherwise
 * (%d for ints, %g for doubles): "integer_adm2_egl_1",
 * "integer_adm3_csf_2_dlmw_0.7_egl_1_min_0.5_nw_0.02". Models and logs address features by
 * these keys; vmaf-stream's FeatureValues use them too.
 */
import { optionValueText, type OptionDef, type OptionValues } from './option.js';

/** libvmaf's long feature names and the short names its logs use. */
const ALIASES: ReadonlyMap<string, string> = new Map([
  ['VMAF_feature_adm2_score', 'adm2'],
  ['VMAF_feature_aim_score', 'aim'],
  ['VMAF_feature_adm3_score', 'adm3'],
  ['VMAF_feature_adm_scale0_score', 'adm_scale0'],
  ['VMAF_feature_adm_scale1_score', 'adm_scale1'],
  ['VMAF_feature_adm_scale2_score', 'adm_scale2'],
  ['VMAF_feature_adm_scale3_score', 'adm_scale3'],
  ['VMAF_feature_motion_score', 'motion'],
  ['VMAF_feature_motion2_score', 'motion2'],
  ['VMAF_feature_motion3_score', 'motion3'],
  ['VMAF_feature_vif_scale0_score', 'vif_scale0'],
  ['VMAF_feature_vif_scale1_score', 'vif_scale1'],
  ['VMAF_feature_vif_scale2_score', 'vif_scale2'],
  ['VMAF_feature_vif_scale3_score', 'vif_scale3'],
  ['VMAF_integer_feature_adm2_score', 'integer_adm2'],
  ['VMAF_integer_feature_aim_score', 'integer_aim'],
  ['VMAF_integer_feature_adm3_score', 'integer_adm3'],
  ['VMAF_integer_feature_motion_score', 'integer_motion'],
  ['VMAF_integer_feature_motion2_score', 'integer_motion2'],
  ['VMAF_integer_feature_motion3_score', 'integer_motion3'],
  ['VMAF_integer_feature_vif_scale0_score', 'integer_vif_scale0'],
  ['VMAF_integer_feature_vif_scale1_score', 'integer_vif_scale1'],
  ['VMAF_integer_feature_vif_scale2_score', 'integer_vif_scale2'],
  ['VMAF_integer_feature_vif_scale3_score', 'integer_vif_scale3'],
  ['Cambi_feature_cambi_score', 'cambi'],
  ['Speed_chroma_feature_speed_chroma_u_score', 'speed_chroma_u'],
  ['Speed_chroma_feature_speed_chroma_v_score', 'speed_chroma_v'],
  ['Speed_chroma_feature_speed_chroma_uv_score', 'speed_chroma_uv'],
  ['Speed_temporal_feature_speed_temporal_score', 'speed_temporal'],
]);

/** The short name libvmaf logs a provided feature under (before option suffixes). */
export function featureAlias(name: string): string {
  return ALIASES.get(name) ?? name;
}

/** The option suffix an instance with these values gives every feature it provides. */
export function optionSuffix(table: readonly OptionDef[], values: OptionValues): string {
  return table
    .filter((opt) => opt.param && values[opt.name] !== undefined && values[opt.name] !== opt.default)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((opt) => (opt.type === 'bool' ? `_${opt.alias ?? opt.name}` : `_${opt.alias ?? opt.name}_${optionValueText(opt, values[opt.name]!)}`))
    .join('');
}

/** The log key of `provided` (a provided feature's name) computed with these option values. */
export function featureKey(provided: string, table: readonly OptionDef[], values: OptionValues): string {
  return featureAlias(provided) + optionSuffix(table, values);
}
