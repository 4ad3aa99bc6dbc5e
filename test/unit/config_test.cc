// The SCOUT_* registry: parsing, defaults, bad values, and the docs table.
#include "scout/config.h"

#include <gtest/gtest.h>

#include "test/support/tmpdir.h"

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using scout::config::Config;

Config load_from(const std::map<std::string, std::string>& env, std::vector<std::string>* warnings) {
  return scout::config::load(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      [&](const std::string& m) { warnings->push_back(m); });
}

TEST(Config, DefaultsWhenUnset) {
  std::vector<std::string> w;
  Config c = load_from({}, &w);
  EXPECT_TRUE(w.empty());
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.shm_dir, "/dev/shm");
  EXPECT_EQ(c.max_comms, 32);
  EXPECT_EQ(c.ring_slots, 2048);
  EXPECT_EQ(c.fp_max_bytes, 64ull << 20);
  EXPECT_DOUBLE_EQ(c.fp_budget, 0.01);
}

TEST(Config, ParsesTypedValues) {
  std::vector<std::string> w;
  Config c = load_from({{"SCOUT_ENABLE", "off"},
                        {"SCOUT_MAX_COMMS", " 7 "},
                        {"SCOUT_FP_MAX_BYTES", "16MiB"},
                        {"SCOUT_FP_BUDGET", "0.05"},
                        {"SCOUT_JOB_ID", "job-42"}},
                       &w);
  EXPECT_TRUE(w.empty());
  EXPECT_FALSE(c.enable);
  EXPECT_EQ(c.max_comms, 7);
  EXPECT_EQ(c.fp_max_bytes, 16ull << 20);
  EXPECT_DOUBLE_EQ(c.fp_budget, 0.05);
  EXPECT_EQ(c.job_id, "job-42");
}

TEST(Config, BadValuesGetOneMessageAndTheDefault) {
  std::vector<std::string> w;
  Config c = load_from(
      {{"SCOUT_MAX_COMMS", "abc"}, {"SCOUT_FP_BUDGET", "2"}, {"SCOUT_FP_MAX_BYTES", "12Q"}, {"SCOUT_ENABLE", "maybe"}},
      &w);
  ASSERT_EQ(w.size(), 4u);
  EXPECT_EQ(c.max_comms, 32);  // not atoi("abc") == 0
  EXPECT_DOUBLE_EQ(c.fp_budget, 0.01);
  EXPECT_EQ(c.fp_max_bytes, 64ull << 20);
  EXPECT_TRUE(c.enable);
  bool named = false;
  for (const auto& m : w) named |= m.find("SCOUT_MAX_COMMS=\"abc\" ignored: expected an integer") == 0;
  EXPECT_TRUE(named);
}

TEST(Config, SizeSuffixes) {
  uint64_t v = 0;
  std::string e;
  ASSERT_TRUE(scout::config::parse_size("4096", 0, 1e18, &v, &e));
  EXPECT_EQ(v, 4096u);
  ASSERT_TRUE(scout::config::parse_size("64K", 0, 1e18, &v, &e));
  EXPECT_EQ(v, 65536u);
  ASSERT_TRUE(scout::config::parse_size("1g", 0, 1e18, &v, &e));
  EXPECT_EQ(v, 1ull << 30);
  EXPECT_FALSE(scout::config::parse_size("-1", 0, 1e18, &v, &e));
  EXPECT_FALSE(scout::config::parse_size("1X", 0, 1e18, &v, &e));
}

// docs/configuration.md must hold exactly the table generated from the registry.
TEST(Config, DocsTableMatchesRegistry) {
  std::ifstream f(scout::testing::source_path("docs/configuration.md"));
  ASSERT_TRUE(f.good()) << "docs/configuration.md missing";
  std::stringstream ss;
  ss << f.rdbuf();
  std::string doc = ss.str();
  std::string table = scout::config::markdown_table();
  EXPECT_NE(doc.find(table), std::string::npos)
      << "docs/configuration.md is out of date; regenerate the table with `build/bin/scout config "
         "--markdown`. Expected table:\n"
      << table;
}

TEST(Config, EveryVariableIsNamedScoutAndDocumented) {
  for (const auto& v : scout::config::registry()) {
    EXPECT_EQ(std::string(v.name).rfind("SCOUT_", 0), 0u) << v.name;
    EXPECT_GT(std::string(v.doc).size(), 10u) << v.name;
  }
}

}  // namespace
