// The golden clips the repository carries (test/fixtures/golden/README.md says what each
// proves): the tests that run over every clip check that none went missing.
export const CARRIED_CLIPS = [
  'banding_640x360_10bit',
  'flat_and_static_320x240',
  'gradients_480x270_10bit',
  'hd_1920x1080_x264_2f',
  'hfr_480x270_10bit_60fps',
  'ladder_320x180_300f',
  'mandel_213x121_odd',
  'negated_256x144_2f',
  'rgbtest_301x199_444_12bit',
  'src01_160x90_8bit',
  'src01_288x162_10bit',
  'src01_288x162_8bit',
  'testsrc_640x360_x264_12f',
];
