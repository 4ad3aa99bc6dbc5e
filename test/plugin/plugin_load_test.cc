// The .so is found and loaded exactly as NCCL resolves NCCL_PROFILER_PLUGIN (docs/nccl-notes.md §1.1, 1.2):
// full path, bare soname, short name X -> libnccl-profiler-X.so, unset -> libnccl-profiler.so;
// NCCL 2.28's lookup gets v5, 2.30's gets v6. The dynamic loader's search path is fixed at
// process start, so each case runs in a child process (this test binary re-executed with
// SCOUT_LOAD_CHILD set) with its own LD_LIBRARY_PATH and NCCL_PROFILER_PLUGIN.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "test/plugin/plugin_fixture.h"

extern char** environ;

namespace scout::testing {
namespace {

// ---- child side: runs before gtest when SCOUT_LOAD_CHILD is set, exits with the verdict.
//   SCOUT_LOAD_LOOKUP = 28 | 30, SCOUT_LOAD_EXPECT = 0 (nothing loads) | 5 | 6.
int child_main() {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  const char* lookup = std::getenv("SCOUT_LOAD_LOOKUP");
  int expect = std::atoi(std::getenv("SCOUT_LOAD_EXPECT") ? std::getenv("SCOUT_LOAD_EXPECT") : "-1");
  sim::LoadedPlugin p = sim::load_profiler_plugin(
      env, lookup && std::strcmp(lookup, "30") == 0 ? sim::NcclLookup::k2_30 : sim::NcclLookup::k2_28);
  if (p.version != expect) {
    std::printf("child: expected v%d, got v%d (%s)\n", expect, p.version, p.error.c_str());
    return 1;
  }
  if (expect == 0) {
    std::printf("child: nothing loaded as expected: %s\n", p.error.c_str());
    return 0;
  }
  const char* name = p.v5 ? p.v5->name : p.v6 ? p.v6->name : p.v4->name;
  if (std::strcmp(name, "scout") != 0) {
    std::printf("child: table name %s\n", name);
    return 1;
  }
  // The loaded table works: one communicator, one collective, a segment stamped with the ABI.
  Plugin pl(p);
  int mask = 0;
  void* ctx = pl.init(0x42, 2, 0, "c", 1, &mask);
  OpSpec op;
  CollHandles h = nccl_single_coll(pl, ctx, op);
  run_kernel_ch(pl, ctx, h.coll, 4, gpu_now(), gpu_now() + 1);
  pl.finalize(ctx);
  SegmentView v = read_segment(std::getenv("SCOUT_SHM_DIR"));
  bool ok = v.ok && mask == 0xE46 && v.info.abi_version == uint32_t(expect) && v.records.size() == 1 &&
            v.records[0].size() == 1 && v.records[0][0].state == shm::kStateComplete && pl.bad_results() == 0;
  std::printf("child: loaded v%d by dlopen(\"%s\"); segment %s\n", p.version, p.opened.c_str(),
              ok ? "ok" : (v.error.empty() ? "wrong" : v.error.c_str()));
  sim::unload_profiler_plugin(&p);
  return ok ? 0 : 1;
}

struct ChildHook {
  ChildHook() {
    if (std::getenv("SCOUT_LOAD_CHILD") != nullptr) {
      std::fflush(stdout);
      int rc = child_main();
      std::fflush(stdout);
      std::_Exit(rc);
    }
  }
} g_child_hook;

// ---- parent side
struct Child {
  int status = -1;
  std::string output;
};

// Runs this binary as a child with `set` added to (and `unset` removed from) the environment.
Child run_child(const std::map<std::string, std::string>& set, const std::vector<std::string>& unset,
                const std::string& out_dir) {
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    std::string k = kv.substr(0, kv.find('='));
    if (set.count(k) || std::find(unset.begin(), unset.end(), k) != unset.end()) continue;
    envs.push_back(kv);
  }
  for (auto& [k, v] : set) envs.push_back(k + "=" + v);
  envs.push_back("SCOUT_LOAD_CHILD=1");
  std::vector<char*> envp;
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string out = out_dir + "/child.out";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::string self = "/proc/self/exe";
  char* argv[] = {self.data(), nullptr};
  pid_t pid = 0;
  Child c;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    c.output = std::string("posix_spawn: ") + std::strerror(rc);
    return c;
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  c.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  FILE* f = std::fopen(out.c_str(), "r");
  if (f) {
    char buf[4096];
    size_t n = std::fread(buf, 1, sizeof(buf), f);
    c.output.assign(buf, n);
    std::fclose(f);
  }
  return c;
}

class PluginLoad : public PluginTest {
 protected:
  // Runs one resolution case; the segment goes to a fresh directory.
  void expect_child(const char* plugin_env, const std::string& ld_path, const char* lookup, int expect,
                    const char* opened) {
    TempDir shm;
    std::map<std::string, std::string> set = {{"SCOUT_SHM_DIR", shm.path()},
                                              {"SCOUT_LOAD_LOOKUP", lookup},
                                              {"SCOUT_LOAD_EXPECT", std::to_string(expect)},
                                              {"LD_LIBRARY_PATH", ld_path}};
    std::vector<std::string> unset;
    if (plugin_env) {
      set["NCCL_PROFILER_PLUGIN"] = plugin_env;
    } else {
      unset.push_back("NCCL_PROFILER_PLUGIN");
    }
    Child c = run_child(set, unset, shm.path());
    EXPECT_EQ(c.status, 0) << c.output;
    if (opened) {
      EXPECT_NE(c.output.find(std::string("by dlopen(\"") + opened + "\"); segment ok"), std::string::npos) << c.output;
    }
  }
  std::string lib_dir() { return build_path("lib"); }
};

TEST_F(PluginLoad, FullPathGetsV5With228AndV6With230) {
  expect_child(plugin_path().c_str(), "", "28", 5, plugin_path().c_str());
  expect_child(plugin_path().c_str(), "", "30", 6, plugin_path().c_str());
}

TEST_F(PluginLoad, BareSonameFoundThroughTheLoaderSearchPath) {
  expect_child("libnccl-profiler-scout.so", lib_dir(), "28", 5, "libnccl-profiler-scout.so");
  // Not on the search path: not found.
  expect_child("libnccl-profiler-scout.so", "", "28", 0, nullptr);
}

TEST_F(PluginLoad, ShortNameResolvesToLibncclProfilerName) {
  expect_child("scout", lib_dir(), "28", 5, "libnccl-profiler-scout.so");
  expect_child("scout", lib_dir(), "30", 6, "libnccl-profiler-scout.so");
}

TEST_F(PluginLoad, SymlinkDirectoryOnTheSearchPath) {
  TempDir links;
  ASSERT_EQ(::symlink(plugin_path().c_str(), (links.path() + "/libnccl-profiler-scout.so").c_str()), 0);
  expect_child("libnccl-profiler-scout.so", links.path(), "28", 5, "libnccl-profiler-scout.so");
  expect_child("scout", links.path(), "30", 6, "libnccl-profiler-scout.so");
}

TEST_F(PluginLoad, UnsetLoadsLibncclProfilerSo) {
  TempDir links;
  ASSERT_EQ(::symlink(plugin_path().c_str(), (links.path() + "/libnccl-profiler.so").c_str()), 0);
  expect_child(nullptr, links.path(), "28", 5, "libnccl-profiler.so");
  expect_child(nullptr, links.path(), "30", 6, "libnccl-profiler.so");
  expect_child("", links.path(), "28", 5, "libnccl-profiler.so");  // empty = unset
  expect_child(nullptr, lib_dir(), "28", 0, nullptr);              // no libnccl-profiler.so there
}

TEST_F(PluginLoad, NoneDisablesProfiling) {
  sim::LoadedPlugin p = sim::load_profiler_plugin("NONE");
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.error, "disabled");
}

}  // namespace
}  // namespace scout::testing
