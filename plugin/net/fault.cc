// Net drills: parsing and selection (fault.h).
#include "plugin/net/fault.h"

#include "scout/config.h"

namespace scout::net {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_one(std::string_view spec, FaultSpec* f, std::string* error) {
  const std::string what = std::string(spec);
  size_t colon = spec.find(':');
  std::string_view kind = trim(spec.substr(0, colon));
  if (kind == "delay") {
    f->kind = FaultKind::kDelay;
  } else if (kind == "stall") {
    f->kind = FaultKind::kStall;
  } else if (kind == "flip") {
    f->kind = FaultKind::kFlip;
  } else {
    *error = "'" + what + "': unknown kind (delay, stall or flip)";
    return false;
  }
  bool have_ms = false, have_after = false, have_every = false;
  std::string_view rest = colon == std::string_view::npos ? std::string_view() : spec.substr(colon + 1);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view kv = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (kv.empty()) continue;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) {
      *error = "'" + what + "': '" + std::string(kv) + "' is not key=value";
      return false;
    }
    std::string_view key = trim(kv.substr(0, eq)), val = trim(kv.substr(eq + 1));
    int64_t v = 0;
    std::string why;
    if (key == "peer" || key == "rank") {
      if (!config::parse_int(val, 0, 1e9, &v, &why)) {
        *error = "'" + what + "': " + std::string(key) + ": " + why;
        return false;
      }
      (key == "peer" ? f->peer : f->rank) = int(v);
    } else if (key == "ms" && f->kind == FaultKind::kDelay) {
      if (!config::parse_int(val, 1, 3600000, &v, &why)) {
        *error = "'" + what + "': ms: " + why;
        return false;
      }
      f->ms = v, have_ms = true;
    } else if (key == "after" && f->kind == FaultKind::kStall) {
      if (!config::parse_int(val, 0, 1e15, &v, &why)) {
        *error = "'" + what + "': after: " + why;
        return false;
      }
      f->after = uint64_t(v), have_after = true;
    } else if (key == "every" && f->kind == FaultKind::kFlip) {
      if (!config::parse_int(val, 1, 1e15, &v, &why)) {
        *error = "'" + what + "': every: " + why;
        return false;
      }
      f->every = uint64_t(v), have_every = true;
    } else {
      *error = "'" + what + "': key '" + std::string(key) + "' is not accepted for " + std::string(kind);
      return false;
    }
  }
  if (f->peer < 0) {
    *error = "'" + what + "': peer=R (a global rank) is required";
    return false;
  }
  if (f->rank == f->peer) {
    *error = "'" + what + "': rank must differ from peer";
    return false;
  }
  if ((f->kind == FaultKind::kDelay && !have_ms) || (f->kind == FaultKind::kStall && !have_after) ||
      (f->kind == FaultKind::kFlip && !have_every)) {
    *error = "'" + what + "': missing " +
             std::string(f->kind == FaultKind::kDelay   ? "ms=M"
                         : f->kind == FaultKind::kStall ? "after=N"
                                                        : "every=N");
    return false;
  }
  return true;
}

}  // namespace

bool parse_faults(std::string_view text, std::vector<FaultSpec>* out, std::string* error) {
  out->clear();
  std::vector<FaultSpec> specs;
  while (!text.empty()) {
    size_t semi = text.find(';');
    std::string_view one = trim(text.substr(0, semi));
    text = semi == std::string_view::npos ? std::string_view() : text.substr(semi + 1);
    if (one.empty()) continue;
    FaultSpec f;
    if (!parse_one(one, &f, error)) return false;
    specs.push_back(f);
  }
  *out = std::move(specs);
  return true;
}

ConnFaults faults_for(const std::vector<FaultSpec>& specs, int me, int peer, bool send) {
  ConnFaults c;
  for (const FaultSpec& f : specs) {
    bool hit = false;
    if (f.kind == FaultKind::kFlip) {
      hit = send && peer == f.peer && (f.rank < 0 || me == f.rank);
    } else if (send && peer >= 0) {
      bool touches = me == f.peer || peer == f.peer;
      hit = touches && (f.rank < 0 || me == f.rank || peer == f.rank);
    } else if (!send) {
      hit = me == f.peer && f.rank < 0;  // a receive connection's remote end is not known
    }
    if (!hit) continue;
    const FaultSpec** slot = f.kind == FaultKind::kDelay ? &c.delay : f.kind == FaultKind::kStall ? &c.stall : &c.flip;
    if (*slot == nullptr) *slot = &f;
  }
  return c;
}

std::string describe(const FaultSpec& f) {
  std::string s = f.kind == FaultKind::kDelay ? "delay" : f.kind == FaultKind::kStall ? "stall" : "flip";
  s += ":peer=" + std::to_string(f.peer);
  if (f.kind == FaultKind::kDelay) s += ",ms=" + std::to_string(f.ms);
  if (f.kind == FaultKind::kStall) s += ",after=" + std::to_string(f.after);
  if (f.kind == FaultKind::kFlip) s += ",every=" + std::to_string(f.every);
  if (f.rank >= 0) s += ",rank=" + std::to_string(f.rank);
  return s;
}

}  // namespace scout::net
