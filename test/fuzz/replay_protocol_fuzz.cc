// libFuzzer target: the scout-replay protocol (replay/server.h) against hostile request lines. The
// input is split into lines, each handed to ReplayServer::handle in order (so a fuzzed prepare can
// be followed by fuzzed runs, link and collective requests) over a backend that answers at once. Every answer
// must be one line of valid UTF-8 JSON, an object with "op", and at most a bounded size; nothing
// may throw, abort or take long. `make fuzz` runs it.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/utf8.h"
#include "replay/server.h"

namespace {

using namespace scout::replay;

// Answers every call with a fixed sample: the protocol, not a GPU, is under test.
class InstantBackend : public Backend {
 public:
  std::string name() const override { return "fuzz"; }
  GpuInfo describe(const Participant& p) override {
    GpuInfo g;
    g.global_rank = p.global_rank;
    g.gpu = p.gpu;
    g.ready = true;
    return g;
  }
  Sample run_gemm(const Recipe& r, const Participant& p, int round) override { return sample(r, p, round); }
  Sample run_link(const Recipe& r, const Participant&, const Participant& dst, int round) override {
    return sample(r, dst, round);
  }
  std::vector<Sample> run_coll(const Recipe& r, const std::vector<Participant>& members, int round) override {
    std::vector<Sample> out;
    for (const Participant& p : members) out.push_back(sample(r, p, round));
    return out;
  }
  std::string link_unique_id(const Participant&, std::string*) override { return std::string(256, 'a'); }
  std::vector<Sample> run_link_end(const Recipe& r, const Participant& self, const Participant&, bool sender,
                                   const std::string&, int64_t) override {
    std::vector<Sample> out;
    if (!sender)
      for (int i = 0; i < r.rounds; ++i) out.push_back(sample(r, self, i));
    return out;
  }
  std::vector<Sample> run_coll_end(const Recipe& r, const std::vector<Participant>& members,
                                   const std::vector<int>& local, const std::string&, int64_t) override {
    std::vector<Sample> out;
    for (int i = 0; i < r.rounds; ++i)
      for (const Participant& p : members)
        if (std::find(local.begin(), local.end(), p.global_rank) != local.end()) out.push_back(sample(r, p, i));
    return out;
  }

 private:
  static Sample sample(const Recipe& r, const Participant& p, int round) {
    Sample s;
    s.recipe = r.id;
    s.global_rank = p.global_rank;
    s.gpu = p.gpu;
    s.round = round;
    s.status = SampleStatus::kOk;
    return s;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  InstantBackend backend;
  ReplayServer server(&backend, uint64_t(64) << 20);
  const std::string in(reinterpret_cast<const char*>(data), size);
  size_t pos = 0;
  bool quit = false;
  while (pos <= in.size() && !quit) {
    size_t nl = in.find('\n', pos);
    if (nl == std::string::npos) nl = in.size();
    const std::string line = in.substr(pos, nl - pos);
    pos = nl + 1;
    const std::string answer = server.handle(line, &quit);
    if (answer.find('\n') != std::string::npos || !scout::utf8_valid(answer)) std::abort();
    // Bounded: kMaxSamples samples of a bounded size (ids up to 64 KiB each at worst).
    if (answer.size() > kMaxSamples * 70000) std::abort();
    nlohmann::json a = nlohmann::json::parse(answer, nullptr, false);
    if (!a.is_object() || !a.contains("op") || !a["op"].is_string()) std::abort();
  }
  return 0;
}
