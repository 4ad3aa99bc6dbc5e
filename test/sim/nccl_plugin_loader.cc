#include "test/sim/nccl_plugin_loader.h"

#include <dlfcn.h>
#include <strings.h>

#include <cstring>

namespace scout::sim {
namespace {

void* try_open(const std::string& name, std::string* last_error) {
  // Any case-insensitive prefix of "STATIC_PLUGIN" searches the executable (docs/nccl-notes.md §1.1, item 6).
  const bool static_plugin = !name.empty() && ::strncasecmp(name.c_str(), "STATIC_PLUGIN", name.size()) == 0;
  void* h = ::dlopen(static_plugin ? nullptr : name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    *last_error = e ? e : "dlopen failed";
  }
  return h;
}

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

LoadedPlugin load_profiler_plugin(const char* env_value, NcclLookup lookup) {
  LoadedPlugin p;
  std::string err;
  void* h = nullptr;
  if (env_value && ::strcasecmp(env_value, "none") == 0) {
    p.error = "disabled";
    return p;
  }
  if (env_value == nullptr || env_value[0] == '\0') {
    h = try_open("libnccl-profiler.so", &err);
    if (h) p.opened = "libnccl-profiler.so";
  } else {
    std::string name = env_value;
    h = try_open(name, &err);
    if (h) {
      p.opened = name;
    } else {
      bool has_slash = name.find('/') != std::string::npos;
      bool lib_so = name.rfind("lib", 0) == 0 && ends_with(name, ".so");
      if (!has_slash && !lib_so) {
        std::string alt = "libnccl-profiler-" + name + ".so";
        h = try_open(alt, &err);
        if (h) p.opened = alt;
      }
    }
  }
  if (!h) {
    p.error = "could not open plugin: " + err;
    return p;
  }
  const char* order_28[] = {abi::kSymbolV5, abi::kSymbolV4};
  const char* order_30[] = {abi::kSymbolV6, abi::kSymbolV5, abi::kSymbolV4};
  const char** order = lookup == NcclLookup::k2_30 ? order_30 : order_28;
  size_t n = lookup == NcclLookup::k2_30 ? 3 : 2;
  for (size_t i = 0; i < n; ++i) {
    void* sym = ::dlsym(h, order[i]);
    if (!sym) continue;
    p.handle = h;
    if (std::strcmp(order[i], abi::kSymbolV6) == 0) {
      p.version = 6;
      p.v6 = static_cast<const abi::ProfilerV6*>(sym);
    } else if (std::strcmp(order[i], abi::kSymbolV5) == 0) {
      p.version = 5;
      p.v5 = static_cast<const abi::ProfilerV5*>(sym);
    } else {
      p.version = 4;
      p.v4 = static_cast<const abi::ProfilerV4*>(sym);
    }
    return p;
  }
  ::dlclose(h);
  p.error = "plugin " + p.opened + " is unsupported (no ncclProfiler_v* symbol)";
  return p;
}

void unload_profiler_plugin(LoadedPlugin* p) {
  if (p->handle) ::dlclose(p->handle);
  *p = LoadedPlugin{};
}

}  // namespace scout::sim
