#include "observer/detect/finding_util.h"

#include <cmath>

#include "common/names.h"

namespace scout::obs {

Suspect suspect_of(const Model& m, int proc, int comm_rank) {
  Suspect s;
  s.comm_rank = comm_rank;
  if (proc < 0 || proc >= int(m.procs().size())) return s;
  const Proc& p = m.proc(proc);
  s.global_rank = p.global_rank;
  s.host = p.host;
  s.pid = p.pid;
  s.gpu = p.gpu;
  return s;
}

Suspect suspect_of(const Model& m, const Comm& c, int rank) {
  int proc = rank >= 0 && rank < int(c.ranks.size()) ? c.ranks[rank].proc : -1;
  return suspect_of(m, proc, rank);
}

std::string who(const Model& m, int proc) {
  if (proc < 0 || proc >= int(m.procs().size())) return "an unknown process";
  const Proc& p = m.proc(proc);
  std::string r = p.global_rank >= 0 ? "rank " + std::to_string(p.global_rank) : "a process";
  return r + " (" + p.host + ", pid " + std::to_string(p.pid) + ")";
}

std::string who(const Model& m, const Comm& c, int rank) {
  int proc = rank >= 0 && rank < int(c.ranks.size()) ? c.ranks[rank].proc : -1;
  if (proc >= 0) return who(m, proc);
  return "comm rank " + std::to_string(rank) + " of " + comm_label(c) + " (unknown process)";
}

std::string comm_label(const Comm& c) {
  return c.name.empty() ? hex64(c.key.hash) : c.name + " (" + hex64(c.key.hash) + ")";
}

void set_comm(Finding& f, const Comm& c) {
  f.comm_hash = c.key.hash;
  f.comm_name = c.name;
  f.comm_nranks = c.key.nranks;
}

OpKey op_key(const OpId& id, int rank) {
  if (id.cls == OpClass::kP2p && rank >= 0 && rank == id.dst) return OpKey{"Recv", id.seq};
  return OpKey{shm::func_name(id.func), id.seq};
}

EvComm ev_comm(const Comm& c) { return EvComm{hex64(c.key.hash), c.name, c.key.nranks}; }

EvOp ev_op(const OpId& id) {
  EvOp o{shm::func_name(id.func), id.seq, std::nullopt, std::nullopt};
  if (id.cls == OpClass::kP2p) {
    o.src = id.src;
    o.dst = id.dst;
  }
  return o;
}

int rank_of(const Comm& c, int proc) {
  for (int r = 0; r < int(c.ranks.size()); ++r) {
    if (c.ranks[r].proc == proc) return r;
  }
  return -1;
}

std::vector<int> global_ranks(const Model& m, const Comm& c, const std::vector<int>& ranks) {
  std::vector<int> out;
  for (int r : ranks) {
    int proc = r >= 0 && r < int(c.ranks.size()) ? c.ranks[r].proc : -1;
    out.push_back(proc >= 0 ? m.proc(proc).global_rank : -1);
  }
  return out;
}

double to_ms(int64_t ns) { return std::round(double(ns) / 1e3) / 1e3; }

std::string name_stem(const std::string& name) {
  size_t n = name.size();
  while (n > 0 && ((name[n - 1] >= '0' && name[n - 1] <= '9') || name[n - 1] == '_' || name[n - 1] == '-' ||
                   name[n - 1] == '.')) {
    --n;
  }
  return name.substr(0, n);
}

std::string comm_class(const Comm& c) {
  return name_stem(c.name) + "/" + std::to_string(c.key.nranks) + "/" + std::to_string(c.nnodes);
}

}  // namespace scout::obs
