// Pieces shared by the per-kind evidence renderers of `scout explain` (observer/cli/evidence_*.cc):
// the shapes of docs/findings.md ("Shared shapes inside evidence") in words, and EvidenceText,
// which writes indented lines and remembers which evidence keys a renderer used so the rest can
// be shown by the generic renderer (nothing in the evidence is ever hidden).
//
// Every function accepts any JSON value: a value of an unexpected shape is shown as JSON text,
// never an exception.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "observer/model/evidence.h"

namespace scout::cli::ev {

// *comm* {hash, name, nranks} -> "dp (0x00000000000000d1)"; the hash alone when unnamed.
std::string comm(const nlohmann::json& c);
// *op* {func, seq[, src, dst]} -> "AllReduce #7", p2p "Send #4 (comm rank 0 -> 1)"; null -> "none".
std::string op(const nlohmann::json& o);
// "dp (0x...) AllReduce #7" from a comm and an op.
std::string comm_op(const nlohmann::json& c, const nlohmann::json& o);
// A list of global ranks: [3] -> "rank 3", [0,1,3] -> "ranks 0-1,3"; [] -> "no rank".
std::string ranks(const nlohmann::json& list);
// The ranks of a list, compact, without the word: "0-1,3"; "-" when empty.
std::string rank_list(const nlohmann::json& list);
// Number of elements of a JSON array (0 for anything else).
size_t count(const nlohmann::json& list);
// A number of milliseconds as a duration: 2.5 -> "2.50ms".
std::string ms(const nlohmann::json& v);
// A number as people read it: 30 -> "30", 2.5 -> "2.5", 0.333 -> "0.33".
std::string num(const nlohmann::json& v);
// Any scalar as text ("-" for null); objects and arrays as compact JSON.
std::string text(const nlohmann::json& v);
// The member `key` of an object; a null value when `o` is not an object or lacks it.
const nlohmann::json& at(const nlohmann::json& o, const char* key);
// A string value as is, anything else as text().
std::string str(const nlohmann::json& v);
// "1 rank" / "3 ranks" (the noun in singular or plural after n).
std::string plural(size_t n, const char* one, const char* many);

// The reason of a *wait edge* (`why`) in words, naming the rank waited for:
// absent -> "rank 7 never enqueued it", not-started -> "rank 7 enqueued it but its GPU has not
// started it (its stream is busy elsewhere)", dead -> "rank 7's process died before completing
// it", mismatch -> "rank 7 is in a different collective".
std::string why(const std::string& why, const std::string& rank);
// A wait edge as one sentence: "rank 2 waits for rank 3 in c (0x...) AllReduce #0: rank 3 never
// enqueued it".
std::string edge(const nlohmann::json& e);

// A typed evidence value (observer/model/evidence.h) as the JSON the functions above take:
// the per-kind renderers read evidence through its struct and format pieces with them.
template <class T>
nlohmann::json js(const T& v) {
  return obs::evidence_detail::put(v);
}

// The typed counterparts of comm, op, comm_op, ranks, rank_list, ms, num and edge.
inline std::string comm(const obs::EvComm& c) { return comm(js(c)); }
inline std::string comm(const std::optional<obs::EvComm>& c) { return comm(js(c)); }
inline std::string op(const obs::EvOp& o) { return op(js(o)); }
inline std::string op(const std::optional<obs::EvOp>& o) { return op(js(o)); }
template <class C, class O>
std::string comm_op(const C& c, const O& o) {
  return comm(c) + " " + op(o);
}
inline std::string ranks(const std::vector<int>& list) { return ranks(js(list)); }
inline std::string rank_list(const std::vector<int>& list) { return rank_list(js(list)); }
inline std::string ms(double v) { return ms(nlohmann::json(v)); }
inline std::string num(double v) { return num(nlohmann::json(v)); }
inline std::string edge(const obs::EvWaitEdge& e) { return edge(js(e)); }

// Indented lines for one evidence object read through its struct; keys the struct does not
// know, and known keys the renderer chose not to show (leave), are rendered generically at the
// end (nothing in the evidence is ever hidden).
class EvidenceText {
 public:
  // `evidence` must outlive this object; `shown` are the keys of its struct (obs::evidence_keys);
  // `origin_ns` is the instant times are relative to.
  EvidenceText(const nlohmann::json& evidence, const std::vector<std::string>& shown, int64_t origin_ns,
               std::string indent);

  // `key` is not shown by the renderer: render it generically with the unknown keys.
  void leave(const std::string& key) { shown_.erase(key); }
  // Appends "<indent><extra indent><text>\n".
  void line(const std::string& text, int depth = 0);
  // An instant (CLOCK_REALTIME ns) relative to the origin: "+10.200s".
  std::string when(int64_t ns) const;
  int64_t origin() const { return origin_; }

  // The text so far plus every key not shown, rendered generically.
  std::string finish();

 private:
  const nlohmann::json& ev_;
  std::set<std::string> shown_;
  int64_t origin_;
  std::string indent_;
  std::string out_;
};

}  // namespace scout::cli::ev
