// Run-time CPU feature detection for the kernels that carry a second, AVX2 copy of their
// code (adm.cpp, vif.cpp). GCC and Clang on x86-64 only: elsewhere there is no AVX2 copy to
// choose, and nothing is declared here.
#pragma once

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)

#include <atomic>

namespace vmafs {

// libvmaf's cpumask bits that turn our SIMD copies off (--cpumask): AVX2 and AVX-512.
constexpr unsigned kCpuMaskAvx2 = 1u << 3;
constexpr unsigned kCpuMaskAvx512 = 1u << 4;

inline std::atomic<unsigned>& cpuMask() {
  static std::atomic<unsigned> mask{0};
  return mask;
}

// Whether the AVX2 copies may run: the CPU has AVX2 (asked once per process) and the
// cpumask does not forbid it.
inline bool cpuHasAvx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has && (cpuMask().load(std::memory_order_relaxed) & (kCpuMaskAvx2 | kCpuMaskAvx512)) == 0;
}

}  // namespace vmafs

#endif
