/**
 * Byte offsets in a group's stats buffer (which comes back in one readback): one block per
 * rendition, [core VIF][core ADM][registered extractors' accumulators], then the motion
 * SADs once per group (motion reads the reference only):
 *   [r0 vif][r0 adm][r0 extractors][r1 vif]...[SAD][SAD two frames apart, five-frame window]
 * A stream without core instances has no VIF, ADM or motion part.
 */
export interface StatsLayout {
  renditions: number;
  /** Whether the core (VIF, ADM, motion) runs. */
  core: boolean;
  /** int64 values finishFeatures takes (vif + adm): the core part of a block. */
  finishLength: number;
  /** Bytes of one rendition's block. */
  blockBytes: number;
  /** VIF's offset in a block (ADM follows it). */
  admInBlock: number;
  /** The extractors' offset in a block (after the core part). */
  extractorsInBlock: number;
  motionOffset: number;
  /** The SAD two frames apart's offset; undefined when no instance reads it. */
  motion2Offset: number | undefined;
  bytes: number;
}

/**
 * `counts`: the core's accumulators (undefined without a core); `extractorWords`: the
 * u32 words the registered extractors write per rendition (even).
 */
export function statsLayout(counts: { vif: number; adm: number } | undefined, renditions: number, sad2: boolean, extractorWords = 0): StatsLayout {
  const finishLength = counts ? counts.vif + counts.adm : 0;
  const extractorsInBlock = finishLength * 8;
  const blockBytes = extractorsInBlock + extractorWords * 4;
  const motionOffset = renditions * blockBytes;
  const motionBytes = counts ? (sad2 ? 16 : 8) : 0;
  return {
    renditions,
    core: counts !== undefined,
    finishLength,
    blockBytes,
    admInBlock: counts ? counts.vif * 8 : 0,
    extractorsInBlock,
    motionOffset,
    motion2Offset: counts && sad2 ? motionOffset + 8 : undefined,
    bytes: Math.max(8, motionOffset + motionBytes),
  };
}
