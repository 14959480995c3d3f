{
  "targets": [
    {
      "target_name": "vmaf_native",
      "sources": [
        "<!@(node scripts/native-sources.cjs)"
      ],
      "include_dirs": [
        "<!(node -p \"require('node-addon-api').include_dir\")",
        "src/kernels/cpu"
      ],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags": ["-O3", "-ffp-contract=off"],
      "cflags_cc": ["-std=c++17", "-O3", "-ffp-contract=off", "-fexceptions"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "GCC_OPTIMIZATION_LEVEL": "3",
        "MACOSX_DEPLOYMENT_TARGET": "11.0",
        "OTHER_CFLAGS": ["-ffp-contract=off"],
        "OTHER_CPLUSPLUSFLAGS": ["-std=c++17", "-ffp-contract=off"]
      },
      "msvs_settings": {
        "VCCLCompilerTool": {
          "ExceptionHandling": 1,
          "Optimization": 2,
          "AdditionalOptions": ["/std:c++17", "/fp:precise"]
        }
      }
    }
  ]
}
