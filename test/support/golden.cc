#include "test/support/golden.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace scout::testing {

bool updating_golden() {
  const char* v = std::getenv("SCOUT_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

void expect_golden(const std::string& path, const std::string& actual) {
  if (updating_golden()) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << actual;
    out.close();
    ASSERT_TRUE(out.good()) << "could not write " << path;
    GTEST_SKIP() << "rewrote " << path << " (review it with git diff before committing)";
  }
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f.good()) << "missing golden file " << path << " (`make update-golden` writes it; review it)";
  std::stringstream want;
  want << f.rdbuf();
  EXPECT_EQ(actual, want.str()) << "output differs from " << path
                                << " (after an intended change: `make update-golden`, then review the diff)";
}

}  // namespace scout::testing
