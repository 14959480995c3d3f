// ADM's contrast sensitivity weights: one binary32 factor per scale for the horizontal and
// vertical bands and one for the diagonal band, from libvmaf 3.2.0's four CSF modes
// (adm_csf_mode). The values must be the binary32 numbers libvmaf computes, since they are
// turned into fixed-point weights by truncation: the formulas keep its float/double types
// and operation order, and use the C library's log10/pow/exp (glibc here).
#pragma once

namespace vmafs {

enum class AdmCsfMode : int {
  kWatson97 = 0,             // Watson et al. (1997) DWT quantisation thresholds
  kBarten = 1,               // Barten's CSF at 100 cd/m2, scaled by adm_csf_scale / _diag_scale
  kBartenWatsonBlend = 2,    // tabulated blend, for 6 display heights x viewing distances
  kBartenWatsonBlendMae = 3, // the same, fitted on mean absolute error
};

struct AdmCsfFactors {
  float hv[4];  // [scale]: horizontal and vertical bands
  float d[4];   // [scale]: diagonal band
};

// The factors for a mode, normalised viewing distance and reference display height.
// csfScale / csfDiagScale apply to the Barten mode only, as in libvmaf. Returns false where
// libvmaf has no value (a blend mode outside its table), leaving `out` unspecified.
bool admCsfFactors(AdmCsfMode mode, double normViewDist, int refDisplayHeight, double csfScale,
                   double csfDiagScale, AdmCsfFactors* out);

}  // namespace vmafs
