// captureStderr(fn) for the vmaf_native module: see stderr_capture.cpp.
#pragma once

#include <napi.h>

Napi::Value CaptureStderr(const Napi::CallbackInfo& info);
