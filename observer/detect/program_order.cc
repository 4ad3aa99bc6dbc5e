#include "observer/detect/program_order.h"

namespace scout::obs {

bool same_place(const IssuedCall& c, const CommKey& comm, const OpId& id) {
  if (c.comm != comm || c.id.cls != id.cls) return false;
  if (id.cls == OpClass::kP2p) return c.id.src == id.src && c.id.dst == id.dst;
  return c.id.func == id.func;
}

NextCalls::NextCalls(const Proc& p) {
  const std::vector<const IssuedCall*> h = [&] {
    std::vector<const IssuedCall*> v;
    v.reserve(p.calls.size());
    for (const IssuedCall& c : p.calls) v.push_back(&c);
    return v;
  }();
  const size_t n = h.size();
  if (n < 2) return;
  size_t best = 0, best_len = 0;  // the earlier point (index) and how many calls up to it match
  for (size_t j = n - 1; j-- > 0;) {
    size_t len = 0;
    while (len < kMaxContext && len <= j && same_place(*h[j - len], h[n - 1 - len]->comm, h[n - 1 - len]->id)) ++len;
    if (len > best_len) {
      best = j;
      best_len = len;
    }
  }
  if (best_len == 0) return;
  next_.assign(h.begin() + long(best) + 1, h.end());
}

size_t NextCalls::position(const CommKey& comm, const OpId& id) const {
  for (size_t i = 0; i < next_.size(); ++i) {
    if (same_place(*next_[i], comm, id)) return i + 1;
  }
  return 0;
}

}  // namespace scout::obs
