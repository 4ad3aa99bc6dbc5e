// GEMM capture is silent (docs/replay.md, "GEMM capture"): while a window captures shapes from a
// cuBLASLt that prints every traced line to its log file (stdout unless told otherwise, also while
// a callback is set, as the real library did on the H200: 240 of 240 matmuls in the job's
// output), not one byte reaches the process's stdout or stderr or any file, and the logger is
// back to its defaults after the window. The library is the stand-in test/fakelibs/fake_cublaslt.cc,
// loaded as libcublasLt.so.13 and found by the plugin's own lookup (find_loaded_logger).
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "plugin/gemm/capture.h"
#include "plugin/gemm/shape_table.h"
#include "scout/shm_format.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout;
using scout::testing::TempDir;

// fds 1 and 2 go to files for the life of this object (then back), so the test can count every
// byte the process writes there.
class CapturedOutput {
 public:
  explicit CapturedOutput(const std::string& dir) : out_(dir + "/stdout"), err_(dir + "/stderr") {
    std::fflush(stdout);
    std::fflush(stderr);
    saved_out_ = ::dup(1);
    saved_err_ = ::dup(2);
    int o = ::open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = ::open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::close(o);
    ::close(e);
  }
  ~CapturedOutput() {
    std::fflush(stdout);
    std::fflush(stderr);
    ::dup2(saved_out_, 1);
    ::dup2(saved_err_, 2);
    ::close(saved_out_);
    ::close(saved_err_);
  }
  uint64_t out_bytes() const { return size(out_); }
  uint64_t err_bytes() const { return size(err_); }

 private:
  static uint64_t size(const std::string& p) {
    std::fflush(stdout);
    std::fflush(stderr);
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
  }
  std::string out_, err_;
  int saved_out_ = -1, saved_err_ = -1;
};

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(dir)) v.push_back(e.path().filename().string());
  return v;
}

TEST(GemmCaptureSilent, NoLogByteReachesStdoutStderrOrAnyFileWhileShapesAreCaptured) {
  const std::string lib = scout::testing::build_path("lib/fake-cublaslt/libcublasLt.so.13");
  void* h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(h, nullptr) << ::dlerror();
  auto set_level = reinterpret_cast<int (*)(int)>(::dlsym(h, "cublasLtLoggerSetLevel"));
  auto matmul = reinterpret_cast<void (*)(uint64_t, uint64_t, uint64_t)>(::dlsym(h, "fake_cublaslt_matmul"));
  ASSERT_NE(set_level, nullptr);
  ASSERT_NE(matmul, nullptr);

  TempDir io, cwd;
  const std::string old_cwd = std::filesystem::current_path().string();
  ASSERT_EQ(::chdir(cwd.path().c_str()), 0);
  std::vector<uint64_t> table_mem(shm::gemm_table_bytes(16) / 8, 0);
  auto* hdr = reinterpret_cast<shm::GemmTableHeader*>(table_mem.data());
  auto table = gemm::ShapeTable::attach(hdr, table_mem.size() * 8);
  ASSERT_TRUE(table);
  uint64_t control = 0, during_out = 0, during_err = 0, after = 0;
  std::vector<std::string> made;
  {
    CapturedOutput out(io.path());
    // The stand-in behaves as cuBLASLt: at level 2 a matmul is printed to stdout.
    set_level(2);
    matmul(64, 128, 256);
    set_level(0);
    control = out.out_bytes();

    gemm::CaptureOptions o;  // the plugin's own lookup of the loaded library
    o.window_ns = 1000;
    o.period_ns = 1000000;
    o.getenv = [](const char*) -> const char* { return nullptr; };
    auto cap = gemm::Capture::create(table.get(), o);
    ASSERT_TRUE(cap);
    const uint64_t out0 = out.out_bytes(), err0 = out.err_bytes();
    cap->tick(1);  // opens the window
    EXPECT_EQ(hdr->state.load(), shm::kGemmCapturing);
    for (int i = 0; i < 4; ++i) {
      matmul(2048, 64, 2048);
      matmul(2048, 2048, 64);
      matmul(16, 2048, 2048);
    }
    cap->tick(2000);  // closes it
    EXPECT_EQ(hdr->state.load(), shm::kGemmWaiting);
    during_out = out.out_bytes() - out0;
    during_err = out.err_bytes() - err0;
    made = files_in(cwd.path());
    // After the window the logger is cuBLASLt's default again: level 2 prints to stdout.
    set_level(2);
    matmul(64, 128, 256);
    set_level(0);
    after = out.out_bytes() - out0 - during_out;
  }
  ASSERT_EQ(::chdir(old_cwd.c_str()), 0);
  EXPECT_GT(control, 100u) << "the stand-in must print like cuBLASLt, else this test proves nothing";
  EXPECT_EQ(during_out, 0u) << "cuBLASLt log bytes reached stdout during the window";
  EXPECT_EQ(during_err, 0u) << "bytes reached stderr during the window";
  EXPECT_TRUE(made.empty()) << "a file appeared in the working directory: " << made.front();
  EXPECT_EQ(after, control) << "the log file was not restored to stdout after the window";
  EXPECT_EQ(hdr->lines.load(), 12u);
  EXPECT_EQ(hdr->captured.load(), 12u);
  EXPECT_EQ(hdr->malformed.load(), 0u);
  ASSERT_EQ(hdr->n_entries.load(), 3u);
  const auto* e = reinterpret_cast<const shm::GemmShapeEntry*>(reinterpret_cast<const char*>(hdr) +
                                                               shm::kGemmTableHeaderBytes);
  EXPECT_EQ(e[0].m, 2048u);
  EXPECT_EQ(e[0].n, 64u);
  EXPECT_EQ(e[0].k, 2048u);
  EXPECT_EQ(e[0].count.load(), 4u);
  EXPECT_EQ(e[2].m, 16u);
  EXPECT_EQ(e[2].count.load(), 4u);
}

}  // namespace
