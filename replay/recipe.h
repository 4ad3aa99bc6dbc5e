// Replay recipes (docs/replay.md, "Recipes"): the work scout-replay re-runs with known inputs.
//   gemm: a matrix multiply D = A x B of one shape and datatype, inputs from a seed, run on each
//         chosen GPU `rounds` times (every GPU of the same model, SM count and library version
//         must give the same bits; two rounds on one GPU must agree with each other);
//   coll: one collective class of the job (membership in global ranks, function, datatype,
//         count, algorithm, protocol) on a replay communicator of the same membership, inputs
//         from a seed per rank, so the exact expected result is known to every rank;
//   link: a send from one GPU to another (one directed pair at a time); the receiver checks the
//         payload's fingerprint; time gives the pair's bandwidth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace scout::replay {

enum class RecipeKind { kGemm, kColl, kLink };
const char* to_string(RecipeKind k);  // "gemm", "coll", "link"

// One GEMM shape: D(m x n) = A(m x k) * B(k x n), column-major, no transposes.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  std::string dtype = "bf16";  // "bf16", "fp16", "fp32"
  bool operator==(const GemmShape&) const = default;
};
// Bytes of one element of a GEMM datatype (0 for an unknown one).
int gemm_dtype_bytes(const std::string& dtype);

// A collective class as recorded by the plugin (docs/record-format.md).
struct CollClass {
  std::string func;        // "AllReduce", "AllGather", "ReduceScatter", "Broadcast"
  std::string datatype;    // record datatype name ("float32", "bfloat16", ...)
  int elem_bytes = 4;      // bytes per element of `datatype`
  uint64_t count = 0;      // elements per rank (the record's count)
  std::string algo;        // "RING", "TREE", ... ("" unknown)
  std::string proto;       // "LL", "LL128", "SIMPLE" ("" unknown)
  std::vector<int> ranks;  // members, global ranks, ascending
  bool operator==(const CollClass&) const = default;
};

struct Recipe {
  std::string id;  // stable name, e.g. "gemm:bf16:256x256x256", "link:2->3", "coll:AllReduce:..."
  RecipeKind kind = RecipeKind::kGemm;
  GemmShape gemm;          // kGemm
  CollClass coll;          // kColl
  int src = -1, dst = -1;  // kLink: global ranks (sender, receiver)
  uint64_t bytes = 0;      // kLink payload bytes
  uint64_t seed = 1;       // input seed (per rank: seed ^ rank mix)
  int rounds = 2;          // runs per GPU (self-consistency and timing confirmation)
  int iters = 10;          // kGemm: timed matmuls per run (after one untimed warm-up)
};

nlohmann::json to_json(const Recipe& r);
// A collective class as JSON {func, datatype, elem_bytes, count, algo, proto, ranks}, and back:
// coll_class_of throws std::exception naming what is missing or out of range (elem_bytes 1..8,
// count >= 0, at most kMaxCollRanks ranks of 0..2^24; check_recipe checks the rest).
nlohmann::json to_json(const CollClass& c);
CollClass coll_class_of(const nlohmann::json& j);
// False with *error on a missing or mistyped key, or a value check_recipe refuses (with the
// largest device bytes one recipe may need, `max_bytes`: SCOUT_REPLAY_MAX_MEM).
bool from_json(const nlohmann::json& j, Recipe* out, std::string* error, uint64_t max_bytes = uint64_t(2) << 30);

// Bounds every request to scout-replay is held to (docs/replay.md, "Processes"), whoever wrote it.
constexpr int64_t kMaxGemmDim = 65536;       // m, n, k
constexpr size_t kMaxRecipeIdBytes = 65536;  // a collective's id lists its members
constexpr size_t kMaxCollRanks = 8192;       // members of one collective recipe
constexpr int kMaxGlobalRank = 1 << 24;

// Device bytes recipe `r` needs at least on one GPU: a GEMM's A, B and D; a link's payload; a
// collective's send and receive buffers. Computed in 128-bit arithmetic and saturated at
// UINT64_MAX, so no value of a request can wrap it.
uint64_t recipe_device_bytes(const Recipe& r);

// "" when `r` is within the bounds above: id of 1..65536 bytes; GEMM dimensions 1..65536 and dtype
// bf16, fp16 or fp32; a known collective function, elem_bytes 1, 2, 4 or 8, count >= 1, 1..65536
// members (at most 8192) ascending without repeats, each 0..2^24; a link between two different ranks 0..2^24 of
// at least 4 bytes, a multiple of 4; rounds 1..16, iters 1..1000; and recipe_device_bytes(r) <=
// max_bytes. Else what is wrong, in words.
std::string check_recipe(const Recipe& r, uint64_t max_bytes);

// SCOUT_REPLAY_GEMMS: "MxNxK[:dtype],..." (dtype bf16 by default), e.g. "4096x4096x4096:bf16,
// 1024x8192x1024:fp16". Dimensions 1..65536. False with *error naming the bad item.
bool parse_gemms(const std::string& spec, std::vector<GemmShape>* out, std::string* error);

// The default GEMM set when no shape is declared: 4096x4096x4096 in bf16 and in fp32 (about
// 0.2 and 3 ms per matmul on an H100; ten of them per run clear the 2 ms outlier floor).
std::vector<GemmShape> default_gemms();

// The collective classes the job issued, gathered from judged records: one entry per distinct
// (membership, function, datatype, count, algorithm, protocol), in first-seen order, at most
// `max_classes` (later classes are counted in dropped()).
class CollClassSet {
 public:
  explicit CollClassSet(size_t max_classes = 64) : max_(max_classes) {}
  // Adds a class (ignored if already present; counted as dropped when full).
  void add(const CollClass& c);
  const std::vector<CollClass>& classes() const { return classes_; }
  uint64_t dropped() const { return dropped_; }

 private:
  size_t max_;
  std::vector<CollClass> classes_;
  uint64_t dropped_ = 0;
};

// What a cycle should run.
struct RecipePlan {
  std::vector<GemmShape> gemms;            // GEMM recipes (run on every participating GPU)
  std::vector<CollClass> colls;            // collective recipes (classes from the records)
  std::vector<std::pair<int, int>> links;  // directed pairs (sender, receiver), global ranks
  uint64_t link_bytes = 4 << 20;
  uint64_t max_coll_bytes = 64 << 20;  // a class larger than this is replayed at this size
  uint64_t seed = 1;
  int rounds = 2;
  int gemm_iters = 10;
};

// Builds the recipe list of a plan: GEMMs first, then collectives, then links, ids unique.
std::vector<Recipe> build_recipes(const RecipePlan& plan);

// Every directed pair (a, b), a != b, of members that share a communicator in `groups`
// (memberships in global ranks), each once, ascending by (a, b).
std::vector<std::pair<int, int>> pairs_of(const std::vector<std::vector<int>>& groups);

}  // namespace scout::replay
