// v4 descriptor translation (v4_adapter.h).
#include "plugin/core/v4_adapter.h"

#include <cstring>

#include "plugin/core/events.h"

namespace scout::core {

bool descr_from_v4(const abi::DescrV4& in, abi::DescrV5* out) {
  std::memset(out, 0, sizeof(*out));
  out->type = in.type;
  out->parentObj = in.parentObj;
  out->rank = in.rank;
  if (!copy_shared_members(in.type, in, out)) return false;
  if (in.type == abi::kEvColl) {
    out->coll.parentGroup = in.parentObj;
  } else if (in.type == abi::kEvP2p) {
    out->p2p.nChannels = 0;  // not filled by NCCL for v4: unknown (start_event is told)
    out->p2p.parentGroup = in.parentObj;
  }
  return true;
}

void start_event_v4(void* ctx, void** handle, const abi::DescrV4* d) {
  if (handle == nullptr) return;
  if (d == nullptr) {
    *handle = nullptr;
    return;
  }
  abi::DescrV5 v5;
  if (!descr_from_v4(*d, &v5)) {
    v5.type = uint64_t(1) << 63;  // reported as unknown by start_event
  }
  start_event(ctx, handle, &v5, 4);
}

}  // namespace scout::core
