// The sim's plugin loader follows NCCL 2.28.9's name resolution (docs/nccl-notes.md §1.1, 1.2).
#include <gtest/gtest.h>

#include "test/sim/nccl_plugin_loader.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout::sim;
using scout::testing::build_path;

TEST(PluginLoader, NoneDisablesProfiling) {
  LoadedPlugin p = load_profiler_plugin("NoNe");
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.error, "disabled");
}

TEST(PluginLoader, FullPathGetsV5With2_28LookupAndV6With2_30Lookup) {
  std::string path = build_path("lib/libnccl-profiler-scout.so");
  LoadedPlugin p = load_profiler_plugin(path.c_str());
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.version, 5);
  EXPECT_EQ(p.opened, path);
  unload_profiler_plugin(&p);
  EXPECT_FALSE(p.ok());
  LoadedPlugin q = load_profiler_plugin(path.c_str(), NcclLookup::k2_30);
  ASSERT_TRUE(q.ok()) << q.error;
  EXPECT_EQ(q.version, 6);
  unload_profiler_plugin(&q);
}

TEST(PluginLoader, StaticPluginPrefixSearchesTheExecutable) {
  // This test binary exports no ncclProfiler_v* symbol: found, opened, unsupported.
  for (const char* name : {"STATIC_PLUGIN", "static_plugin", "s", "Static"}) {
    LoadedPlugin p = load_profiler_plugin(name);
    EXPECT_FALSE(p.ok()) << name;
    EXPECT_EQ(p.opened, name);
    EXPECT_NE(p.error.find("unsupported"), std::string::npos) << p.error;
  }
}

TEST(PluginLoader, MissingLibraryIsAnErrorNotACrash) {
  LoadedPlugin p = load_profiler_plugin("/nonexistent/libnccl-profiler-x.so");
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.error.rfind("could not open plugin: ", 0), 0u) << p.error;
  LoadedPlugin q = load_profiler_plugin("no-such-profiler");  // then libnccl-profiler-no-such-profiler.so
  EXPECT_FALSE(q.ok());
  EXPECT_NE(q.error.find("libnccl-profiler-no-such-profiler.so"), std::string::npos) << q.error;
}

}  // namespace
