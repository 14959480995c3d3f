/**
 * Byte offsets in a group's stats buffer (which comes back in one readback): one block per
 * rendition, [core VIF][core ADM][registered extractors' accumulators], then the motion
 * SADs once per group (motion reads the reference only):
 *   [r0 vif][r0 adm][r0 extractors][r1 vif]...[SAD][SAD two frames apart, five-frame window]
 * Only the core parts the run computes take room (core-parts.ts): a VMAF v1 run's blocks
 * have no VIF or ADM part, a run without core instances no VIF, ADM or motion part.
 */
export interface StatsLayout {
  renditions: number;
  /** Whether any core part (VIF, ADM, motion) runs. */
  core: boolean;
  /** int64 values finishFeatures takes (the computed parts of vif + adm): the core part of a block. */
  finishLength: number;
  /** Bytes of one rendition's block. */
  blockBytes: number;
  /** ADM's offset in a block (after VIF's part, if any). */
  admInBlock: number;
  /** The extractors' offset in a block (after the core part). */
  extractorsInBlock: number;
  /** The SAD's offset; undefined when motion is not computed. */
  motionOffset: number | undefined;
  /** The SAD two frames apart's offset; undefined when no instance reads it. */
  motion2Offset: number | undefined;
  bytes: number;
}

/**
 * `core`: the accumulators of the computed VIF and ADM parts (0 for a part not computed)
 * and whether motion is; `extractorWords`: the u32 words the registered extractors write
 * per rendition (even).
 */
export function statsLayout(core: { vif: number; adm: number; motion: boolean }, renditions: number, sad2: boolean, extractorWords = 0): StatsLayout {
  const finishLength = core.vif + core.adm;
  const extractorsInBlock = finishLength * 8;
  const blockBytes = extractorsInBlock + extractorWords * 4;
  const end = renditions * blockBytes;
  const motionOffset = core.motion ? end : undefined;
  const motion2Offset = core.motion && sad2 ? end + 8 : undefined;
  const motionBytes = core.motion ? (sad2 ? 16 : 8) : 0;
  return {
    renditions,
    core: finishLength > 0 || core.motion,
    finishLength,
    blockBytes,
    admInBlock: core.vif * 8,
    extractorsInBlock,
    motionOffset,
    motion2Offset,
    bytes: Math.max(8, end + motionBytes),
  };
}
