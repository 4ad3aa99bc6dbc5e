// findings.evidence_version: stored with each finding, read back, and a store written before the
// column existed (same schema version) still reads (version 1) and is upgraded by a writer.
#include <sqlite3.h>

#include <gtest/gtest.h>

#include "observer/model/evidence.h"
#include "observer/store/reader.h"
#include "observer/store/schema.h"
#include "observer/store/sqlite.h"
#include "observer/store/writer.h"
#include "test/support/tmpdir.h"

namespace {

using namespace scout;
using scout::testing::TempDir;

std::unique_ptr<store::StoreWriter> open_writer(const std::string& path) {
  store::WriterOptions o;
  o.on_error = [](const std::string& m) { ADD_FAILURE() << m; };
  std::string err;
  auto w = store::StoreWriter::open(path, o, &err);
  EXPECT_TRUE(w) << err;
  return w;
}

obs::Finding finding(const std::string& key, int evidence_version) {
  obs::Finding f;
  f.kind = obs::FindingKind::kCrash;
  f.dedup_key = key;
  f.first_seen_ns = 1;
  f.last_seen_ns = 2;
  f.summary = key;
  f.evidence = {{"pid", 7}};
  f.evidence_version = evidence_version;
  return f;
}

TEST(StoreEvidenceVersion, StoredAndReadBackWithEachFinding) {
  TempDir dir;
  const std::string path = dir.path() + "/s.db";
  {
    auto w = open_writer(path);
    obs::Finding a = finding("a", obs::kEvidenceVersion);
    obs::Finding b = finding("b", 3);
    w->upsert_finding(&a);
    w->upsert_finding(&b);
    b.evidence_version = 4;  // an update replaces it
    w->upsert_finding(&b);
    w->flush();
  }
  auto rd = store::StoreReader::open(path);
  auto all = rd->findings();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].evidence_version, obs::kEvidenceVersion);
  EXPECT_EQ(all[1].evidence_version, 4);
}

TEST(StoreEvidenceVersion, StoreWithoutTheColumnReadsAsVersionOneAndIsUpgraded) {
  TempDir dir;
  const std::string path = dir.path() + "/s.db";
  {
    auto w = open_writer(path);
    obs::Finding a = finding("a", 2);
    w->upsert_finding(&a);
    w->flush();
  }
  {
    // The findings table as a scout before evidence_version wrote it.
    store::Db db(path, SQLITE_OPEN_READWRITE);
    db.exec("ALTER TABLE findings DROP COLUMN evidence_version");
  }
  {
    store::Db db(path, SQLITE_OPEN_READONLY);
    EXPECT_FALSE(store::has_column(db, "findings", "evidence_version"));
  }
  {
    auto rd = store::StoreReader::open(path);
    auto all = rd->findings();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].summary, "a");
    EXPECT_EQ(all[0].evidence_version, 1);
  }
  {
    auto w = open_writer(path);  // adds the column: old rows are version 1
    obs::Finding b = finding("b", 2);
    w->upsert_finding(&b);
    w->flush();
  }
  auto rd = store::StoreReader::open(path);
  auto all = rd->findings();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].evidence_version, 1);
  EXPECT_EQ(all[1].evidence_version, 2);
  EXPECT_EQ(rd->meta().schema_version, store::kSchemaVersion);
}

}  // namespace
