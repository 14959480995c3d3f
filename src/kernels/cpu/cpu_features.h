// Run-time CPU feature detection for the kernels that carry a second, AVX2 copy of their
// code (adm.cpp, vif.cpp). GCC and Clang on x86-64 only: elsewhere there is no AVX2 copy to
// choose, and nothing is declared here.
#pragma once

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)

namespace vmafs {

// Whether the CPU running this process has AVX2; asked once per process.
inline bool cpuHasAvx2() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return has;
}

}  // namespace vmafs

#endif
