// ADM's CSF factors (see adm_csf.h). Every intermediate is declared float where libvmaf's is a
// float and computed in double where C promotes it; the explicit casts below are those
// conversions. std::pow/exp/log10 are called on doubles only (their float overloads would
// round differently).
#include "adm_csf.h"

#include <cmath>

namespace vmafs {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Display visual resolution in pixels per degree, as a binary32 (~56.55 at 3 x 1080).
float pixelsPerDegree(double normViewDist, int refDisplayHeight) {
  return static_cast<float>(normViewDist * refDisplayHeight * kPi / 180.0);
}

// Watson, Yang, Solomon, Villasenor (1997), "Visibility of wavelet quantization noise":
// the luma threshold model (their Table IV) and the 7/9 basis amplitudes (Table V) for
// orientation 1 (h, v) and 2 (d) at the four finest levels.
float watsonQuantStep(int level, bool diagonal, double normViewDist, int refDisplayHeight) {
  constexpr float kA = 0.495f, kK = 0.466f, kF0 = 0.401f;
  constexpr float kGain[2] = {1.0f, 0.534f};
  constexpr float kAmplitude[4][2] = {
      {0.67234f, 0.72709f}, {0.41317f, 0.49428f}, {0.22727f, 0.28688f}, {0.11792f, 0.15214f}};
  const float r = pixelsPerDegree(normViewDist, refDisplayHeight);
  const float temp = static_cast<float>(
      std::log10(std::pow(2.0, level + 1) * kF0 * kGain[diagonal] / static_cast<double>(r)));
  const float exponent = kK * temp * temp;
  return static_cast<float>(2.0 * kA * std::pow(10.0, static_cast<double>(exponent)) /
                            kAmplitude[level][diagonal]);
}

// Barten's CSF: the optical MTF, the luminance-dependent sensitivity and the neural CSF
// (parameters interpolated in log luminance between the anchors 20 and 150 cd/m2, the
// segment that holds libvmaf's fixed 100 cd/m2).
float bartenMtf(float frequency) {
  constexpr float kA[4] = {0.424838596301290f, 0.572435103936480f, 0.000167576239164937f,
                           0.00255872352306433f};
  constexpr float kB[4] = {0.028f, 0.37f, 37.0f, 360.0f};
  float mtf = 0.0f;
  for (int i = 0; i < 4; ++i) {
    mtf = static_cast<float>(mtf + kA[i] * std::exp(static_cast<double>(-kB[i] * frequency)));
  }
  return mtf;
}

float bartenLuminanceSensitivity(float luminance) {
  constexpr float kPeak = 30.162f, kDrop = 4.0627f, kSlope = 1.6596f, kLowSlope = 0.2712f;
  return static_cast<float>(
      kPeak * std::pow(std::pow(static_cast<double>(kDrop / luminance), static_cast<double>(kSlope)) + 1,
                       static_cast<double>(-kLowSlope)));
}

float interpolate(float x0, float y0, float x1, float y1, float x) {
  return y0 + ((y1 - y0) / (x1 - x0)) * (x - x0);
}

float bartenCsf(int level, double normViewDist, int refDisplayHeight, double scale) {
  constexpr double kLuminance = 100.0;
  constexpr float kLowAnchor = 20.0f, kHighAnchor = 150.0f;
  constexpr float kLow[4] = {0.334278f, 3.79542f, 1.07327f, 6.4635f};
  constexpr float kHigh[4] = {0.394533f, 2.7755f, 1.16577f, 7.45665f};
  const float r = pixelsPerDegree(normViewDist, refDisplayHeight);
  const float frequency = static_cast<float>(r / std::pow(2.0, level + 1));
  const float x0 = static_cast<float>(std::log10(static_cast<double>(kLowAnchor)));
  const float x1 = static_cast<float>(std::log10(static_cast<double>(kHighAnchor)));
  const float x = static_cast<float>(std::log10(kLuminance));
  float p[4];
  for (int i = 0; i < 4; ++i) p[i] = interpolate(x0, kLow[i], x1, kHigh[i], x);
  const float a = static_cast<float>(
      1.0f + std::pow(static_cast<double>(p[0] * frequency), static_cast<double>(p[1])));
  const float b = static_cast<float>(
      1.0f / std::pow(1 - std::exp(-std::pow(static_cast<double>(frequency / 7), 2.0)),
                      static_cast<double>(p[2])));
  const float csf = static_cast<float>(p[3] / std::pow(static_cast<double>(a * b), 0.5));
  const float shaped =
      csf * bartenMtf(frequency) * bartenLuminanceSensitivity(static_cast<float>(kLuminance));
  return static_cast<float>(shaped * scale);
}

// The blended CSF tables: [display][distance][orientation (h/v, d)][scale]; displays 1080,
// 2160, 720, 480 lines; distances 3H and 5H.
struct BlendTable {
  float v[4][2][2][4];
};

constexpr BlendTable kBlend = {{
    {{{0.01183f, 0.025026f, 0.04295f, 0.058621f}, {0.004302f, 0.011778f, 0.023918f, 0.035901f}},
     {{0.004212f, 0.014809f, 0.029642f, 0.047464f}, {0.000984f, 0.005852f, 0.0146f, 0.027574f}}},
    {{{0.00226f, 0.01183f, 0.025026f, 0.04295f}, {0.000479f, 0.004302f, 0.011778f, 0.023918f}},
     {{0.000092f, 0.004212f, 0.014809f, 0.029642f}, {0.000050f, 0.000984f, 0.005852f, 0.0146f}}},
    {{{0.018715f, 0.035637f, 0.052798f, 0.061509f}, {0.007999f, 0.018396f, 0.031851f, 0.037718f}},
     {{0.010144f, 0.022561f, 0.040309f, 0.05672f}, {0.003463f, 0.010282f, 0.021839f, 0.034641f}}},
    {{{0.027961f, 0.045875f, 0.060275f, 0.056234f}, {0.013572f, 0.026277f, 0.036959f, 0.034511f}},
     {{0.016781f, 0.032822f, 0.05032f, 0.061594f}, {0.00691f, 0.016545f, 0.029917f, 0.037777f}}},
}};

constexpr BlendTable kBlendMae = {{
    {{{0.011249f, 0.022606f, 0.035930f, 0.045673f}, {0.004097f, 0.010921f, 0.021430f, 0.031313f}},
     {{0.004052f, 0.013939f, 0.026298f, 0.038833f}, {0.000927f, 0.005544f, 0.013415f, 0.024515f}}},
    {{{0.002166f, 0.011249f, 0.022606f, 0.035930f}, {0.000447f, 0.004097f, 0.010921f, 0.021430f}},
     {{0.000077f, 0.004052f, 0.013939f, 0.026298f}, {0.000045f, 0.000927f, 0.005544f, 0.013415f}}},
    {{{0.017329f, 0.030870f, 0.042134f, 0.047410f}, {0.007509f, 0.016707f, 0.028072f, 0.032722f}},
     {{0.009689f, 0.020577f, 0.034162f, 0.044523f}, {0.003302f, 0.009579f, 0.019661f, 0.030318f}}},
    {{{0.024969f, 0.037825f, 0.046676f, 0.043974f}, {0.012511f, 0.023424f, 0.032139f, 0.030166f}},
     {{0.015665f, 0.028766f, 0.040612f, 0.047483f}, {0.006514f, 0.015107f, 0.026476f, 0.032776f}}},
}};

// Which table row a display height and distance use; 2160 lines at 1.5H is 1080 at 3H (the
// same pixels per degree). Exact comparisons, as libvmaf's.
bool blendIndex(double normViewDist, int refDisplayHeight, int* display, int* distance) {
  if (refDisplayHeight == 2160 && normViewDist == 1.5) {
    *display = 0;
    *distance = 0;
    return true;
  }
  switch (refDisplayHeight) {
    case 1080: *display = 0; break;
    case 2160: *display = 1; break;
    case 720: *display = 2; break;
    case 480: *display = 3; break;
    default: return false;
  }
  if (normViewDist == 3.0) {
    *distance = 0;
  } else if (normViewDist == 5.0) {
    *distance = 1;
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool admCsfFactors(AdmCsfMode mode, double normViewDist, int refDisplayHeight, double csfScale,
                   double csfDiagScale, AdmCsfFactors* out) {
  switch (mode) {
    case AdmCsfMode::kWatson97:
      for (int s = 0; s < 4; ++s) {
        out->hv[s] = 1.0f / watsonQuantStep(s, false, normViewDist, refDisplayHeight);
        out->d[s] = 1.0f / watsonQuantStep(s, true, normViewDist, refDisplayHeight);
      }
      return true;
    case AdmCsfMode::kBarten:
      for (int s = 0; s < 4; ++s) {
        out->hv[s] = bartenCsf(s, normViewDist, refDisplayHeight, csfScale);
        out->d[s] = bartenCsf(s, normViewDist, refDisplayHeight, csfDiagScale);
      }
      return true;
    case AdmCsfMode::kBartenWatsonBlend:
    case AdmCsfMode::kBartenWatsonBlendMae: {
      int display = 0, distance = 0;
      if (!blendIndex(normViewDist, refDisplayHeight, &display, &distance)) return false;
      const BlendTable& t = mode == AdmCsfMode::kBartenWatsonBlend ? kBlend : kBlendMae;
      for (int s = 0; s < 4; ++s) {
        out->hv[s] = t.v[display][distance][0][s];
        out->d[s] = t.v[display][distance][1][s];
      }
      return true;
    }
  }
  return false;
}

}  // namespace vmafs
