#include "test/sim/nccl_types.h"

namespace scout::sim {

const char* func_name(Func f) {
  switch (f) {
    case Func::kBroadcast: return "Broadcast";
    case Func::kReduce: return "Reduce";
    case Func::kAllGather: return "AllGather";
    case Func::kReduceScatter: return "ReduceScatter";
    case Func::kAllReduce: return "AllReduce";
    case Func::kSend: return "Send";
    case Func::kRecv: return "Recv";
    case Func::kAlltoAll: return "AlltoAll";
  }
  return "Unknown";
}

}  // namespace scout::sim
