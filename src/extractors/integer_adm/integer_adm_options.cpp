// integer_adm at options the fused core does not take (VMAF v1's adm3 instances: a CSF mode,
// detail-loss weight, noise weight, min_val, viewing distance or display height of their
// own): one instance per option set, from the cpu ADM's admStatsWithOptions /
// admFinishWithOptions (src/kernels/cpu/adm.h, bit-exact with libvmaf 3.2.0 at any option).
// Values in integer_adm.ts's outputs() order: adm2, aim, adm3, scale0..3.
// On the gpu backend the WGSL ADM (integer_adm-gpu.ts) gives the same kAdmStatsLen
// accumulators and finishStats turns them into values with extract()'s own tail.
#include <cstring>
#include <memory>

#include "adm.h"
#include "extractor.h"

namespace vmafs {
namespace {

AdmOptions admOptionsOf(const ExtractorOptions& o) {
  AdmOptions a;
  a.csfMode = static_cast<int>(o.number("adm_csf_mode"));
  a.csfScale = o.number("adm_csf_scale");
  a.csfDiagScale = o.number("adm_csf_diag_scale");
  a.normViewDist = o.number("adm_norm_view_dist");
  a.refDisplayHeight = static_cast<int>(o.number("adm_ref_display_height"));
  a.noiseWeight = o.number("adm_noise_weight");
  a.dlmWeight = o.number("adm_dlm_weight");
  a.minVal = o.number("adm_min_val");
  a.enhnGainLimit = o.number("adm_enhn_gain_limit");
  a.skipAim = o.flag("adm_skip_aim");
  a.skipScale0 = o.flag("adm_skip_scale0");
  return a;
}

class AdmAtOptions final : public Extractor {
 public:
  AdmAtOptions(const ExtractorOptions& o, const ExtractorGeometry& g)
      : options_(admOptionsOf(o)), width_(g.width), height_(g.height) {
    admKernelParams(options_);  // throws std::invalid_argument for options libvmaf refuses
  }

  size_t outputCount() const override { return kAdmFeaturesPerVariant; }

  void extract(const FrameWindow& f, double* out) const override {
    const PlaneView& r = f.ref->plane[0];
    const PlaneView& d = f.dis->plane[0];
    const LumaPlane ref{r.data, r.width, r.height, f.ref->bitDepth};
    const LumaPlane dis{d.data, d.width, d.height, f.dis->bitDepth};
    int64_t stats[kAdmStatsLen] = {0};
    admStatsWithOptions(ref, dis, options_, stats);
    finishSigned(stats, out);
  }

  size_t statsCount() const override { return kAdmStatsLen; }

  // The GPU writes the signed accumulators as two's-complement 64-bit words.
  void finishStats(const uint64_t* words, double* out) const override {
    int64_t stats[kAdmStatsLen];
    std::memcpy(stats, words, sizeof stats);
    finishSigned(stats, out);
  }

 private:
  void finishSigned(const int64_t* stats, double* out) const {
    admFinishWithOptions(stats, width_, height_, options_, out);
  }

  AdmOptions options_;
  int width_;
  int height_;
};

std::unique_ptr<Extractor> make(const ExtractorOptions& o, const ExtractorGeometry& g) {
  return std::make_unique<AdmAtOptions>(o, g);
}

}  // namespace

VMAFS_REGISTER_EXTRACTOR("integer_adm_options", make);

}  // namespace vmafs
