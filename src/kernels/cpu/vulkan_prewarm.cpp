// prewarmVulkan() and awaitVulkanPrewarm() for the vmaf_native module.
//
// A process's first Vulkan instance loads and initialises the GPU driver (on the H100 machine
// about 80 ms of Dawn's first requestAdapter; a second instance in the same process takes
// about 6 ms). Dawn does this on the thread that asks, blocking it. prewarmVulkan() does it
// at the command line's start, on a thread of its own, while Node loads the run's modules:
// it opens the Vulkan loader, creates an instance and lists the physical devices, and keeps
// that instance (and so the driver) loaded for the process's life. Dawn's own instance then
// finds the driver ready. Nothing here is needed for correctness: where the loader or a driver
// is missing, it does nothing, and Dawn reports what it finds as before.
//
// No Vulkan headers at build time: the loader is opened at run time, and the few declarations
// used are written out below (the Vulkan 1.0 ABI).
#include "vulkan_prewarm.h"

#if defined(__linux__)
#include <dlfcn.h>
#endif

#include <system_error>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace {

struct VkInstanceT;
struct VkPhysicalDeviceT;
using VkInstance = VkInstanceT*;
using VkPhysicalDevice = VkPhysicalDeviceT*;
using VkResult = int32_t;

struct VkApplicationInfo {
  int32_t sType;
  const void* pNext;
  const char* pApplicationName;
  uint32_t applicationVersion;
  const char* pEngineName;
  uint32_t engineVersion;
  uint32_t apiVersion;
};

struct VkInstanceCreateInfo {
  int32_t sType;
  const void* pNext;
  uint32_t flags;
  const VkApplicationInfo* pApplicationInfo;
  uint32_t enabledLayerCount;
  const char* const* ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char* const* ppEnabledExtensionNames;
};

using VoidFunction = void (*)();
using GetInstanceProcAddr = VoidFunction (*)(VkInstance, const char*);
using CreateInstance = VkResult (*)(const VkInstanceCreateInfo*, const void*, VkInstance*);
using EnumeratePhysicalDevices = VkResult (*)(VkInstance, uint32_t*, VkPhysicalDevice*);

constexpr int32_t kStructureTypeApplicationInfo = 0;
constexpr int32_t kStructureTypeInstanceCreateInfo = 1;
constexpr uint32_t kApiVersion10 = 1u << 22;

void warm() {
#if !defined(__linux__)
  return;  // elsewhere Dawn loads its driver itself (another loader name, other costs)
#else
  void* loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (loader == nullptr) return;
  auto getProc = reinterpret_cast<GetInstanceProcAddr>(dlsym(loader, "vkGetInstanceProcAddr"));
  if (getProc == nullptr) return;
  auto create = reinterpret_cast<CreateInstance>(getProc(nullptr, "vkCreateInstance"));
  if (create == nullptr) return;
  const VkApplicationInfo app{kStructureTypeApplicationInfo, nullptr, "vmaf-stream", 0, nullptr, 0, kApiVersion10};
  const VkInstanceCreateInfo info{kStructureTypeInstanceCreateInfo, nullptr, 0, &app, 0, nullptr, 0, nullptr};
  VkInstance instance = nullptr;
  if (create(&info, nullptr, &instance) != 0 || instance == nullptr) return;
  auto enumerate = reinterpret_cast<EnumeratePhysicalDevices>(getProc(instance, "vkEnumeratePhysicalDevices"));
  if (enumerate == nullptr) return;
  uint32_t count = 0;
  if (enumerate(instance, &count, nullptr) != 0 || count == 0) return;
  VkPhysicalDevice devices[16];
  if (count > 16) count = 16;
  enumerate(instance, &count, devices);
  // The instance and the loader stay: destroying the last instance unloads the driver again.
#endif
}

std::mutex warmerLock;
std::condition_variable warmerDone;
bool started = false;
bool running = false;

}  // namespace

// prewarmVulkan(): starts the driver's loading on a thread of its own (detached: nothing
// joins it at exit); a second call does nothing.
Napi::Value PrewarmVulkan(const Napi::CallbackInfo& info) {
  std::lock_guard<std::mutex> hold(warmerLock);
  if (!started) {
    started = true;
    try {
      std::thread([] {
        warm();
        std::lock_guard<std::mutex> done(warmerLock);
        running = false;
        warmerDone.notify_all();
      }).detach();
      running = true;
    } catch (const std::system_error&) {
      // No thread to be had: Dawn loads the driver itself, as without this.
    }
  }
  return info.Env().Undefined();
}

// awaitVulkanPrewarm(): waits (at most 2 s) for that thread to finish. Called as the process
// ends normally, so that exit handlers (the driver's own among them) do not run under a
// driver still loading.
Napi::Value AwaitVulkanPrewarm(const Napi::CallbackInfo& info) {
  std::unique_lock<std::mutex> hold(warmerLock);
  warmerDone.wait_for(hold, std::chrono::seconds(2), [] { return !running; });
  return info.Env().Undefined();
}
