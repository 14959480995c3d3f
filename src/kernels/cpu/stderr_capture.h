// captureStderr(fn) for the vmaf_native module: see stderr_capture.cpp.
#pragma once

#include <napi.h>

Napi::Value CaptureStderr(const Napi::CallbackInfo& info);

// Waits up to ms for a capture under way on another thread to end (its sink restored and
// its foreign lines written back); false if it did not.
bool waitForStderrCaptures(int ms);
