// The cuBLASLt matmul log parser (plugin/gemm/log_parse.h) on lines in the logger's documented
// format (cuBLAS documentation, "cuBLASLt logging": level 2 trace lines of matmul calls), the
// shape table it feeds (plugin/gemm/shape_table.h) and the capture windows (capture.h) with a
// fake cuBLASLt logger.
#include "plugin/gemm/log_parse.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/gemm_names.h"
#include "plugin/gemm/capture.h"
#include "plugin/gemm/shape_table.h"
#include "scout/shm_format.h"

namespace {

using namespace scout;
using gemm::ParseResult;

// A level-2 trace message as cuBLASLt hands it to the callback.
std::string line(const std::string& a, const std::string& b, const std::string& c, const std::string& d,
                 const std::string& compute, const std::string& algo = "") {
  std::string s = "A=0X7F0000000000 Adesc=[" + a + "] B=0X7F0000100000 Bdesc=[" + b + "] C=0X0 Cdesc=[" + c +
                  "] D=0X7F0000200000 Ddesc=[" + d + "] computeDesc=[" + compute + "]";
  if (!algo.empty()) s += " algo=[" + algo + "]";
  return s + " workSpace=0X0 workSpaceSizeInBytes=0 beta=0 outOfPlace=1 stream=0X0";
}

TEST(GemmLogParse, BF16TransposedAWithAlgorithm) {
  // D (m=64 x n=128) = A^T (A is k=1088 x m=64) * B (k=1088 x n=128)... written as cuBLASLt logs it.
  std::string msg = line("type=R_16BF rows=1088 cols=64 ld=1088", "type=R_16BF rows=1088 cols=128 ld=1088",
                         "type=R_16BF rows=64 cols=128 ld=64", "type=R_16BF rows=64 cols=128 ld=64",
                         "computeType=COMPUTE_32F scaleType=R_32F transa=OP_T smCountTarget=132",
                         "algoId=66 tile=MATMUL_TILE_128x128 stages=MATMUL_STAGES_128xAUTO customOption=3 "
                         "clusterShape=CLUSTER_SHAPE_1x1x1");
  shm::GemmKey k;
  ASSERT_EQ(gemm::parse_matmul("cublasLtMatmul", msg, &k), ParseResult::kOk);
  EXPECT_EQ(k.m, 64u);
  EXPECT_EQ(k.n, 128u);
  EXPECT_EQ(k.k, 1088u);
  EXPECT_EQ(k.batch, 1u);
  EXPECT_EQ(k.a_type, shm::kGemmR16BF);
  EXPECT_EQ(k.d_type, shm::kGemmR16BF);
  EXPECT_EQ(k.compute, shm::kGemmCompute32F);
  EXPECT_EQ(k.scale_type, shm::kGemmR32F);
  EXPECT_EQ(k.layout, shm::kGemmTransA);
  EXPECT_EQ(k.algo, 66);
  EXPECT_EQ(k.tile_m, 128);
  EXPECT_EQ(k.tile_n, 128);
}

TEST(GemmLogParse, EveryLayout) {
  // m=48, n=176, k=1024 under each of NN, TN, NT, TT.
  struct Case {
    const char* trans;
    const char* a;
    const char* b;
    uint8_t layout;
  } cases[] = {
      {"", "rows=48 cols=1024", "rows=1024 cols=176", 0},
      {" transa=OP_T", "rows=1024 cols=48", "rows=1024 cols=176", shm::kGemmTransA},
      {" transb=OP_T", "rows=48 cols=1024", "rows=176 cols=1024", shm::kGemmTransB},
      {" transa=OP_T transb=OP_T", "rows=1024 cols=48", "rows=176 cols=1024", shm::kGemmTransA | shm::kGemmTransB},
      {" transa=OP_C", "rows=1024 cols=48", "rows=1024 cols=176", shm::kGemmConjA},
  };
  for (const Case& c : cases) {
    std::string msg = line(std::string("type=R_16F ") + c.a + " ld=1024", std::string("type=R_16F ") + c.b + " ld=1024",
                           "type=R_16F rows=48 cols=176 ld=48", "type=R_16F rows=48 cols=176 ld=48",
                           std::string("computeType=COMPUTE_32F scaleType=R_32F") + c.trans);
    shm::GemmKey k;
    ASSERT_EQ(gemm::parse_matmul("cublasLtHHHMatmul", msg, &k), ParseResult::kOk) << c.trans;
    EXPECT_EQ(k.m, 48u) << c.trans;
    EXPECT_EQ(k.n, 176u) << c.trans;
    EXPECT_EQ(k.k, 1024u) << c.trans;
    EXPECT_EQ(k.layout, c.layout) << c.trans;
    EXPECT_EQ(k.algo, -1);
    EXPECT_EQ(k.tile_m, 0);
  }
}

TEST(GemmLogParse, RowOrderAndBatch) {
  std::string msg = line("type=R_16BF rows=32 cols=64 ld=64 order=ORDER_ROW batchCount=8 strideBatch=2048",
                         "type=R_16BF rows=64 cols=16 ld=16 order=ORDER_ROW batchCount=8 strideBatch=1024",
                         "type=R_16BF rows=32 cols=16 ld=16 order=ORDER_ROW batchCount=8 strideBatch=512",
                         "type=R_16BF rows=32 cols=16 ld=16 order=ORDER_ROW batchCount=8 strideBatch=512",
                         "computeType=COMPUTE_32F scaleType=R_32F");
  shm::GemmKey k;
  ASSERT_EQ(gemm::parse_matmul("cublasLtMatmul", msg, &k), ParseResult::kOk);
  EXPECT_EQ(k.batch, 8u);
  EXPECT_EQ(k.layout, shm::kGemmRowA | shm::kGemmRowB | shm::kGemmRowD);
  EXPECT_EQ(k.m, 32u);
  EXPECT_EQ(k.n, 16u);
  EXPECT_EQ(k.k, 64u);
}

TEST(GemmLogParse, EveryDatatypeAndComputeType) {
  const char* types[] = {"R_16F",     "R_16BF",    "R_32F",     "R_64F", "R_8I",  "R_8U", "R_32I",
                         "R_8F_E4M3", "R_8F_E5M2", "R_4F_E2M1", "C_32F", "C_64F", "C_16F"};
  for (const char* t : types) {
    std::string d = std::string("type=") + t + " rows=8 cols=8 ld=8";
    shm::GemmKey k;
    ASSERT_EQ(gemm::parse_matmul("cublasLtMatmul", line(d, d, d, d, "computeType=COMPUTE_32F scaleType=R_32F"), &k),
              ParseResult::kOk)
        << t;
    EXPECT_NE(k.a_type, shm::kGemmTypeUnknown);
    EXPECT_STREQ(shm::gemm_type_name(k.a_type), t);
  }
  const char* computes[] = {"COMPUTE_16F",           "COMPUTE_16F_PEDANTIC", "COMPUTE_32F",
                            "COMPUTE_32F_PEDANTIC",  "COMPUTE_32F_FAST_16F", "COMPUTE_32F_FAST_16BF",
                            "COMPUTE_32F_FAST_TF32", "COMPUTE_64F",          "COMPUTE_64F_PEDANTIC",
                            "COMPUTE_32I",           "COMPUTE_32I_PEDANTIC"};
  for (const char* c : computes) {
    std::string d = "type=R_32F rows=8 cols=8 ld=8";
    shm::GemmKey k;
    ASSERT_EQ(gemm::parse_matmul("cublasLtSSSMatmul", line(d, d, d, d, std::string("computeType=") + c), &k),
              ParseResult::kOk)
        << c;
    EXPECT_STREQ(shm::gemm_compute_name(k.compute), c);
    EXPECT_EQ(k.scale_type, shm::kGemmTypeUnknown);  // not logged
  }
}

TEST(GemmLogParse, FileLinePrefixAndWrappedLine) {
  // A line as CUBLASLT_LOG_FILE writes it (prefix kept), wrapped over several lines.
  std::string msg =
      "[2025-11-03 19:02:38][cublasLt][557785][Trace][cublasLtMatmul] A=0X736CB315E800\n"
      "Adesc=[type=R_8F_E4M3 rows=64 cols=1088 ld=64] B=0X736C9B644000\n"
      "Bdesc=[type=R_8F_E4M3 rows=128 cols=1088 ld=128] C=0X0\n"
      "Cdesc=[type=R_16BF rows=64 cols=128 ld=64] D=0X736CB30A4400\n"
      "Ddesc=[type=R_16BF rows=64 cols=128 ld=64]\n"
      "computeDesc=[computeType=COMPUTE_32F scaleType=R_32F transb=OP_T\n"
      "aScalePointer=0x736cb30b4c00 bScalePointer=0x736cb30ba200]\n"
      "algo=[algoId=66 tile=MATMUL_TILE_128x128 stages=MATMUL_STAGES_128xAUTO]\n"
      "workSpace=0X0 workSpaceSizeInBytes=0 beta=0 outOfPlace=1 stream=0X0";
  shm::GemmKey k;
  ASSERT_EQ(gemm::parse_matmul("cublasLtMatmul", msg, &k), ParseResult::kOk);
  EXPECT_EQ(k.m, 64u);
  EXPECT_EQ(k.n, 128u);
  EXPECT_EQ(k.k, 1088u);
  EXPECT_EQ(k.a_type, shm::kGemmR8FE4M3);
  EXPECT_EQ(k.c_type, shm::kGemmR16BF);
  EXPECT_EQ(k.layout, shm::kGemmTransB);
}

TEST(GemmLogParse, OtherFunctionsAreNotMatmuls) {
  shm::GemmKey k;
  EXPECT_EQ(gemm::parse_matmul("cublasLtMatmulAlgoGetHeuristic", "Adesc=[type=R_16F rows=1 cols=1 ld=1]", &k),
            ParseResult::kNotMatmul);
  EXPECT_EQ(gemm::parse_matmul("cublasLtCreate", "handle=0x1", &k), ParseResult::kNotMatmul);
  EXPECT_TRUE(gemm::is_matmul_function("cublasLtTSTMatmul"));
  EXPECT_FALSE(gemm::is_matmul_function("Matmu"));
}

TEST(GemmLogParse, MalformedLinesAreRejected) {
  const std::string ok_a = "type=R_16BF rows=64 cols=32 ld=64", ok_b = "type=R_16BF rows=32 cols=16 ld=32",
                    ok_d = "type=R_16BF rows=64 cols=16 ld=64", ok_c = "computeType=COMPUTE_32F scaleType=R_32F";
  shm::GemmKey k;
  ASSERT_EQ(gemm::parse_matmul("cublasLtMatmul", line(ok_a, ok_b, ok_d, ok_d, ok_c), &k), ParseResult::kOk);
  const std::vector<std::string> bad = {
      "",                                                                         // empty
      "A=0X1 B=0X2",                                                              // no descriptors
      line("type=R_16BF rows=64 cols=32", ok_b, ok_d, ok_d, ok_c).substr(0, 60),  // truncated
      line("type=R_99Z rows=64 cols=32 ld=64", ok_b, ok_d, ok_d, ok_c),           // unknown type
      line("type=R_16BF rows=x cols=32 ld=64", ok_b, ok_d, ok_d, ok_c),           // not a number
      line("type=R_16BF cols=32 ld=64", ok_b, ok_d, ok_d, ok_c),                  // rows missing
      line(ok_a, "type=R_16BF rows=33 cols=16 ld=33", ok_d, ok_d, ok_c),          // k disagrees
      line(ok_a, ok_b, ok_d, "type=R_16BF rows=64 cols=17 ld=64", ok_c),          // D disagrees with C
      line(ok_a, ok_b, ok_d, ok_d, "scaleType=R_32F"),                            // no compute type
      line(ok_a, ok_b, ok_d, ok_d, "computeType=COMPUTE_7F"),                     // unknown compute type
      line(ok_a, ok_b, ok_d, ok_d, ok_c + " transa=OP_X"),                        // unknown op
      line("type=R_16BF rows=0 cols=0 ld=1", "type=R_16BF rows=0 cols=16 ld=1", "type=R_16BF rows=0 cols=16 ld=1",
           "type=R_16BF rows=0 cols=16 ld=1", ok_c),                                        // zero size
      line("type=R_16BF rows=99999999999999999999 cols=32 ld=64", ok_b, ok_d, ok_d, ok_c),  // overflow
  };
  for (const std::string& m : bad) {
    EXPECT_EQ(gemm::parse_matmul("cublasLtMatmul", m, &k), ParseResult::kMalformed) << m;
  }
}

// ---- shape table and capture windows, with a fake cuBLASLt logger ----

struct FakeLt {
  static inline gemm::LtCallback cb = nullptr;
  static inline int level = 0;
  static inline int set_calls = 0;
  static int set_callback(gemm::LtCallback c) {
    cb = c;
    set_calls++;
    return 0;
  }
  static int set_level(int l) {
    level = l;
    return 0;
  }
  static inline FILE* file = nullptr;
  static int set_file(FILE* f) {
    file = f;
    return 0;
  }
  static void emit(const char* fn, const std::string& msg) {
    if (cb != nullptr && level >= 2) cb(2, fn, msg.c_str());
  }
};

std::string mm(int m) {
  return line("type=R_16BF rows=4096 cols=" + std::to_string(m) + " ld=4096", "type=R_16BF rows=4096 cols=1024 ld=4096",
              "type=R_16BF rows=" + std::to_string(m) + " cols=1024 ld=" + std::to_string(m),
              "type=R_16BF rows=" + std::to_string(m) + " cols=1024 ld=" + std::to_string(m),
              "computeType=COMPUTE_32F scaleType=R_32F transa=OP_T");
}

struct TableBuf {
  std::vector<uint64_t> mem;
  explicit TableBuf(uint32_t cap) : mem(shm::gemm_table_bytes(cap) / 8, 0) {}
  shm::GemmTableHeader* hdr() { return reinterpret_cast<shm::GemmTableHeader*>(mem.data()); }
  shm::GemmShapeEntry* entries() {
    return reinterpret_cast<shm::GemmShapeEntry*>(reinterpret_cast<char*>(mem.data()) + shm::kGemmTableHeaderBytes);
  }
  uint64_t bytes() const { return mem.size() * 8; }
};

TEST(GemmCapture, WindowsCountShapesAndRestoreTheLogger) {
  TableBuf buf(4);
  auto table = gemm::ShapeTable::attach(buf.hdr(), buf.bytes());
  ASSERT_TRUE(table);
  gemm::CaptureOptions o;
  o.window_ns = 100;
  o.period_ns = 1000;
  o.finder = [](gemm::LoggerApi* a) {
    a->lt_set_callback = &FakeLt::set_callback;
    a->lt_set_level = &FakeLt::set_level;
    a->lt_set_file = &FakeLt::set_file;
    return true;
  };
  o.getenv = [](const char*) -> const char* { return nullptr; };
  auto cap = gemm::Capture::create(table.get(), o);
  ASSERT_TRUE(cap);
  FakeLt::emit("cublasLtMatmul", mm(8));  // before any window: not seen
  cap->tick(10);                          // opens the window [10, 110)
  EXPECT_EQ(FakeLt::level, 2);
  ASSERT_NE(FakeLt::file, nullptr);
  EXPECT_NE(FakeLt::file, stdout);  // the log goes to the discard stream, not the job's output
  EXPECT_NE(FakeLt::file, stderr);
  EXPECT_EQ(buf.hdr()->state.load(), shm::kGemmCapturing);
  FakeLt::emit("cublasLtMatmul", mm(8));
  FakeLt::emit("cublasLtMatmul", mm(8));
  FakeLt::emit("cublasLtMatmul", mm(24));
  FakeLt::emit("cublasLtMatmulAlgoGetHeuristic", "preference=[maxWavesCount=0.0]");
  FakeLt::emit("cublasLtMatmul", "Adesc=[type=R_16BF rows=4096");
  for (int m = 100; m < 104; ++m) FakeLt::emit("cublasLtMatmul", mm(m));  // 2 fit, 2 dropped (capacity 4)
  cap->tick(109);
  EXPECT_EQ(FakeLt::level, 2);
  cap->tick(110);  // closes: level 0, no callback
  EXPECT_EQ(FakeLt::level, 0);
  EXPECT_EQ(FakeLt::cb, nullptr);
  EXPECT_EQ(FakeLt::file, stdout);  // cuBLASLt's default log file again
  EXPECT_EQ(buf.hdr()->state.load(), shm::kGemmWaiting);
  FakeLt::emit("cublasLtMatmul", mm(8));
  const shm::GemmTableHeader* h = buf.hdr();
  EXPECT_EQ(h->windows.load(), 1u);
  EXPECT_EQ(h->lines.load(), 9u);
  EXPECT_EQ(h->captured.load(), 5u);
  EXPECT_EQ(h->ignored.load(), 1u);
  EXPECT_EQ(h->malformed.load(), 1u);
  EXPECT_EQ(h->dropped_full.load(), 2u);
  EXPECT_EQ(h->window_ns.load(), 100u);
  ASSERT_EQ(h->n_entries.load(), 4u);
  EXPECT_EQ(buf.entries()[0].m, 8u);
  EXPECT_EQ(buf.entries()[0].k, 4096u);
  EXPECT_EQ(buf.entries()[0].count.load(), 2u);
  EXPECT_EQ(buf.entries()[1].m, 24u);
  EXPECT_EQ(buf.entries()[1].count.load(), 1u);
  EXPECT_EQ(buf.entries()[3].m, 101u);
  cap->tick(1009);  // next window opens at 10 + period
  EXPECT_EQ(FakeLt::level, 0);
  cap->tick(1010);
  EXPECT_EQ(FakeLt::level, 2);
  cap.reset();  // destruction restores the logger
  EXPECT_EQ(FakeLt::level, 0);
  EXPECT_EQ(FakeLt::cb, nullptr);
}

TEST(GemmCapture, UserLoggingIsLeftAlone) {
  TableBuf buf(4);
  auto table = gemm::ShapeTable::attach(buf.hdr(), buf.bytes());
  gemm::CaptureOptions o;
  std::vector<std::string> logs;
  o.finder = [](gemm::LoggerApi* a) {
    a->lt_set_callback = &FakeLt::set_callback;
    a->lt_set_level = &FakeLt::set_level;
    a->lt_set_file = &FakeLt::set_file;
    return true;
  };
  o.getenv = [](const char* n) -> const char* { return std::strcmp(n, "CUBLASLT_LOG_LEVEL") == 0 ? "2" : nullptr; };
  o.log = [&logs](const std::string& l) { logs.push_back(l); };
  FakeLt::set_calls = 0;
  auto cap = gemm::Capture::create(table.get(), o);
  cap->tick(1);
  cap->tick(1000000000000);
  EXPECT_EQ(FakeLt::set_calls, 0);
  EXPECT_EQ(buf.hdr()->state.load(), shm::kGemmUserLogger);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("CUBLASLT_LOG_LEVEL=2"), std::string::npos);
}

TEST(GemmCapture, UserCublasCallbackIsLeftAlone) {
  TableBuf buf(4);
  auto table = gemm::ShapeTable::attach(buf.hdr(), buf.bytes());
  gemm::CaptureOptions o;
  o.finder = [](gemm::LoggerApi* a) {
    a->lt_set_callback = &FakeLt::set_callback;
    a->lt_set_level = &FakeLt::set_level;
    a->cublas_get_callback = [](void (**cb)(const char*)) {
      *cb = [](const char*) {};
      return 0;
    };
    return true;
  };
  o.getenv = [](const char*) -> const char* { return nullptr; };
  FakeLt::set_calls = 0;
  auto cap = gemm::Capture::create(table.get(), o);
  cap->tick(1);
  EXPECT_EQ(FakeLt::set_calls, 0);
  EXPECT_EQ(buf.hdr()->state.load(), shm::kGemmUserLogger);
}

// A cuBLASLt without cublasLtLoggerSetFile would print every traced matmul into the job's
// output: no window opens there, the table says capture failed, the logger is untouched.
TEST(GemmCapture, NoCaptureWhereTheLogCannotBeSilenced) {
  TableBuf buf(4);
  auto table = gemm::ShapeTable::attach(buf.hdr(), buf.bytes());
  gemm::CaptureOptions o;
  std::vector<std::string> logs;
  o.finder = [](gemm::LoggerApi* a) {
    a->lt_set_callback = &FakeLt::set_callback;
    a->lt_set_level = &FakeLt::set_level;
    return true;  // no lt_set_file
  };
  o.getenv = [](const char*) -> const char* { return nullptr; };
  o.log = [&logs](const std::string& l) { logs.push_back(l); };
  FakeLt::set_calls = 0;
  FakeLt::level = 0;
  auto cap = gemm::Capture::create(table.get(), o);
  cap->tick(1);
  EXPECT_EQ(FakeLt::set_calls, 0);
  EXPECT_EQ(FakeLt::level, 0);
  EXPECT_EQ(buf.hdr()->state.load(), shm::kGemmFailed);
  ASSERT_EQ(logs.size(), 1u);
  EXPECT_NE(logs[0].find("cublasLtLoggerSetFile"), std::string::npos);
}

TEST(GemmCapture, NoLibraryIsRetriedNextPeriod) {
  TableBuf buf(4);
  auto table = gemm::ShapeTable::attach(buf.hdr(), buf.bytes());
  gemm::CaptureOptions o;
  o.window_ns = 10;
  o.period_ns = 100;
  static int finds = 0;
  finds = 0;
  o.finder = [](gemm::LoggerApi*) {
    finds++;
    return false;
  };
  auto cap = gemm::Capture::create(table.get(), o);
  cap->tick(0);
  cap->tick(50);
  EXPECT_EQ(finds, 1);
  cap->tick(100);
  EXPECT_EQ(finds, 2);
  EXPECT_EQ(buf.hdr()->state.load(), shm::kGemmNoLibrary);
}

TEST(GemmShapeTable, ReattachKeepsCountsAndIndex) {
  TableBuf buf(8);
  {
    auto t = gemm::ShapeTable::attach(buf.hdr(), buf.bytes());
    shm::GemmKey k;
    k.m = 3, k.n = 4, k.k = 5;
    t->record(k);
    t->record(k);
  }
  auto t = gemm::ShapeTable::attach(buf.hdr(), buf.bytes());
  shm::GemmKey k;
  k.m = 3, k.n = 4, k.k = 5;
  t->record(k);
  EXPECT_EQ(buf.hdr()->n_entries.load(), 1u);
  EXPECT_EQ(buf.entries()[0].count.load(), 3u);
  EXPECT_EQ(buf.hdr()->capacity, 8u);
}

}  // namespace
