// prewarmVulkan() and awaitVulkanPrewarm() for the vmaf_native module: see vulkan_prewarm.cpp.
#pragma once

#include <napi.h>

Napi::Value PrewarmVulkan(const Napi::CallbackInfo& info);
Napi::Value AwaitVulkanPrewarm(const Napi::CallbackInfo& info);
