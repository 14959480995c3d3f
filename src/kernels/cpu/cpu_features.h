// Run-time choice of the instruction set for the kernels that carry several copies of their
// code (adm.cpp, vif.cpp): the best the CPU has, under a cap that tests lower to compare
// every copy with the portable one on the same frames (all copies give identical results).
// Only GCC and Clang on x86-64 have the SIMD copies; elsewhere the level is kBaseline.
#pragma once

#include <atomic>

namespace vmafs {

enum class IsaLevel : int {
  kScalar = 0,    // portable C++ only, no hand-written SIMD (VIF's scalar filter)
  kBaseline = 1,  // what the build targets (SSE2 on x86-64)
  kAvx2 = 2,
  kAvx512 = 3,    // AVX-512 F, BW, DQ and VL
  kAvx512Vnni = 4,  // and VNNI: VIF's filters fuse multiply-add and accumulate (vpdpwssd)
};

// The best level the CPU running this process (and its OS) supports; asked once.
inline IsaLevel detectedIsa() {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
  static const IsaLevel level = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
      return __builtin_cpu_supports("avx512vnni") ? IsaLevel::kAvx512Vnni : IsaLevel::kAvx512;
    }
    return __builtin_cpu_supports("avx2") ? IsaLevel::kAvx2 : IsaLevel::kBaseline;
  }();
  return level;
#else
  return IsaLevel::kBaseline;
#endif
}

// The cap (a test hook: limitIsa in addon.cpp); jobs read it when they start.
inline std::atomic<int>& isaCap() {
  static std::atomic<int> cap{static_cast<int>(IsaLevel::kAvx512Vnni)};
  return cap;
}

// The level the kernels use now: the detected one, capped.
inline IsaLevel activeIsa() {
  const int cap = isaCap().load(std::memory_order_relaxed);
  const int have = static_cast<int>(detectedIsa());
  return static_cast<IsaLevel>(cap < have ? cap : have);
}

}  // namespace vmafs
