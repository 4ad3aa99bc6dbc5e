// Opening the library of another plugin that the user names in the environment (the profiler
// delegate, SCOUT_PROFILER_DELEGATE, plugin/core/delegate.h; the net delegate, SCOUT_NET_DELEGATE,
// plugin/net/delegate.h) the way NCCL opens a plugin name (docs/nccl-notes.md §1.1, §6.1), without
// ever blocking the rank's NCCL init on a file that is not a library.
#pragma once

#include <cstdint>
#include <string>

namespace scout::core {

// dlopen(spec, RTLD_NOW | RTLD_LOCAL); if that fails and `spec` has no '/' and is not "lib*.so",
// dlopen("<prefix><spec>.so") (prefix: "libnccl-profiler-", "libnccl-net-"). Before each dlopen the
// file it would read is checked without blocking (common/safe_file.h): the path itself, or for a
// bare name each LD_LIBRARY_PATH directory's file of that name; one that is not a regular file (a
// FIFO, on which dlopen blocks in open() forever, or a device) is refused. Returns the handle with
// the name that opened in *opened, or nullptr with the last failure in *error (dlerror's text, or
// "<path> is a FIFO, not a regular file" and the like).
void* open_library(const std::string& spec, const char* prefix, std::string* opened, std::string* error);

// The base address of the loaded library holding `addr` (0 if unknown), to tell whether a table
// lies in scout's own library.
uintptr_t library_of(const void* addr);

}  // namespace scout::core
