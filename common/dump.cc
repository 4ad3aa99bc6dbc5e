// JSON-lines dump of a segment (dump.h).
#include "common/dump.h"

#include <cstdio>

#include "common/link_reader.h"
#include "common/names.h"
#include "common/progress_reader.h"

namespace scout::shm {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

void gap(std::ostream& out, uint32_t ring, uint64_t from, uint64_t to, const char* why, DumpStats* st) {
  nlohmann::json g = {{"type", "gap"}, {"ring", ring}, {"from", from}, {"to", to}, {"reason", why}};
  out << g.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  st->missing += to - from;
}

}  // namespace

nlohmann::json flag_names(uint32_t flags) {
  static const std::pair<uint32_t, const char*> kNames[] = {
      {kFlagGraphCaptured, "graph_captured"},
      {kFlagUserGroup, "user_group"},
      {kFlagFpSampled, "fp_sampled"},
      {kFlagUnmatched, "unmatched"},
      {kFlagNoApi, "no_api"},
      {kFlagInPlace, "in_place"},
      {kFlagHostBuffers, "host_buffers"},
      {kFlagNoKernelCh, "no_kernel_ch"},
  };
  nlohmann::json a = nlohmann::json::array();
  for (auto& [bit, name] : kNames) {
    if (flags & bit) a.push_back(name);
  }
  return a;
}

nlohmann::json segment_json(const SegmentInfo& i, bool owner_alive) {
  return {{"type", "segment"},
          {"path", i.path},
          {"layout_version", i.layout_version},
          {"owner_pid", i.owner_pid},
          {"owner_alive", owner_alive},
          {"owner_start_ticks", i.owner_start_ticks},
          {"created_ns", i.created_ns},
          {"job", i.job},
          {"host", i.host},
          {"gpu", i.gpu},
          {"global_rank", i.global_rank},
          {"local_rank", i.local_rank},
          {"world_size", i.world_size},
          {"cuda_dev", i.cuda_dev},
          {"plugin_version", i.plugin_version},
          {"abi_version", i.abi_version},
          {"max_comms", i.max_comms},
          {"ring_capacity", i.ring_capacity},
          {"n_comms", i.n_comms},
          {"comms_dropped", i.comms_dropped},
          {"events_bad_handle", i.events_bad_handle},
          {"events_unknown", i.events_unknown},
          {"last_event_ns", i.last_event_ns},
          {"closed_ns", i.closed_ns}};
}

nlohmann::json comm_json(const CommSnapshot& c) {
  return {{"type", "comm"},
          {"ring", c.ring},
          {"state", comm_state_name(c.state)},
          {"generation", c.generation},
          {"comm_hash", hex(c.comm_hash)},
          {"name", c.name},
          {"nranks", c.nranks},
          {"rank", c.rank},
          {"nnodes", c.nnodes},
          {"cuda_dev", c.cuda_dev},
          {"init_ns", c.init_ns},
          {"finalize_ns", c.finalize_ns},
          {"head", c.head},
          {"n_coll", c.n_coll},
          {"n_p2p", c.n_p2p},
          {"n_unmatched", c.n_unmatched},
          {"overwritten_live", c.overwritten_live},
          {"bad_handles", c.bad_handles},
          {"foreign_proxy", c.foreign_proxy},
          {"kernelch_orphans", c.kernelch_orphans},
          {"kernelch_extra", c.kernelch_extra},
          {"ignored_events", c.ignored_events},
          {"late_matches", c.late_matches},
          {"api_calls", c.api_calls},
          {"last_api_ns", c.last_api_ns},
          {"gpu_clock_offset_ns", c.gpu_clock_offset_ns},
          {"kernel_ns", c.kernel_ns},
          {"fp_sampled", c.fp_sampled},
          {"fp_skipped", c.fp_skipped},
          {"fp_level", c.fp_level},
          {"fp_gpu_ns", c.fp_gpu_ns},
          {"disabled_reason", c.disabled_reason}};
}

nlohmann::json op_json(uint32_t ring, const RecordSnapshot& r) {
  nlohmann::json j = {{"type", "op"},
                      {"ring", ring},
                      {"index", r.index},
                      {"key", r.key},
                      {"kind", kind_name(r.kind)},
                      {"func", func_name(r.func)},
                      {"datatype", nccl_datatype_name(r.datatype)},
                      {"api_datatype", nccl_datatype_name(r.api_datatype)},
                      {"algo", algo_name(r.algo)},
                      {"proto", proto_name(r.proto)},
                      {"n_channels", r.n_channels},
                      {"n_warps", r.n_warps},
                      {"flags", flag_names(r.flags)},
                      {"peer", r.peer},
                      {"count", r.count},
                      {"api_count", r.api_count},
                      {"bytes", r.bytes},
                      {"group", r.group},
                      {"api_ns", r.api_ns},
                      {"launch_ns", r.launch_ns},
                      {"enqueue_ns", r.enqueue_ns},
                      {"send_buf", hex(r.send_buf)},
                      {"recv_buf", hex(r.recv_buf)},
                      {"stream", hex(r.stream)},
                      {"thread", r.thread},
                      {"state", op_state_name(r.state, Spelling::kRecord)},
                      {"ch_started", r.ch_started},
                      {"ch_stopped", r.ch_stopped},
                      {"ch_started_mask", hex(r.ch_started_mask)},
                      {"ch_stopped_mask", hex(r.ch_stopped_mask)},
                      {"gpu_start_ns", r.gpu_start_ns},
                      {"gpu_end_ns", r.gpu_end_ns},
                      {"complete_ns", r.complete_ns},
                      {"gpu_start_raw", r.gpu_start_raw},
                      {"fp_send_status", fp_status_name(r.fp_send_status, Spelling::kRecord)},
                      {"fp_recv_status", fp_status_name(r.fp_recv_status, Spelling::kRecord)}};
  if (r.fp_send_status == kFpDone) {
    j["fp_send"] = hex(r.fp_send);
    j["send_nan"] = r.send_nan;
    j["send_inf"] = r.send_inf;
  }
  if (r.fp_recv_status == kFpDone) {
    j["fp_recv"] = hex(r.fp_recv);
    j["recv_nan"] = r.recv_nan;
    j["recv_inf"] = r.recv_inf;
  }
  if (r.fp_send_status == kFpDone || r.fp_recv_status == kFpDone) {
    j["fp_bytes"] = r.fp_bytes;
    j["fp_level"] = r.fp_level;
    j["fp_version"] = r.fp_version;
  }
  return j;
}

nlohmann::json links_json(const LinkTableInfo& i) {
  return {{"type", "links"},
          {"capacity", i.capacity},
          {"claimed", i.claimed},
          {"net_state", net_state_name(i.net_state)},
          {"net_abi", i.net_abi},
          {"delegate_abi", i.delegate_abi},
          {"delegate", i.delegate},
          {"dropped_full", i.dropped_full},
          {"net_inits", i.net_inits},
          {"net_errors", i.net_errors},
          {"fault_delayed", i.fault_delayed},
          {"fault_stalled", i.fault_stalled},
          {"fault_flipped", i.fault_flipped},
          {"handle_full", i.handle_full},
          {"proxy_state", proxy_state_name(i.proxy_state)},
          {"proxy_windows", i.proxy_windows},
          {"proxy_window_ns", i.proxy_window_ns},
          {"proxy_window_start_ns", i.proxy_window_start_ns},
          {"proxy_window_end_ns", i.proxy_window_end_ns},
          {"proxy_steps", i.proxy_steps},
          {"proxy_untimed", i.proxy_untimed}};
}

nlohmann::json progress_json(const ProgressTableInfo& i) {
  return {{"type", "progress"},
          {"capacity", i.capacity},
          {"claimed", i.claimed},
          {"request_seq", i.request_seq},
          {"request_comm_hash", hex(i.request_comm_hash)},
          {"request_nranks", i.request_nranks},
          {"request_until_ns", i.request_until_ns},
          {"trace_state", trace_state_name(i.trace_state)},
          {"ack_seq", i.ack_seq},
          {"ack_ns", i.ack_ns},
          {"trace_comm_hash", hex(i.trace_comm_hash)},
          {"trace_until_ns", i.trace_until_ns},
          {"requests", i.requests},
          {"traced_ops", i.traced_ops},
          {"dropped_full", i.dropped_full}};
}

nlohmann::json step_json(const ProgressSnapshot& e) {
  return {{"type", "step"},
          {"index", e.index},
          {"comm_hash", hex(e.comm_hash)},
          {"comm_nranks", e.comm_nranks},
          {"comm_rank", e.comm_rank},
          {"peer", e.peer},
          {"channel", e.channel},
          {"dir", progress_dir_name(e.dir)},
          {"op_gen", e.op_gen},
          {"op_func", e.op_func},
          {"op_key", e.op_key == ~0ull ? nlohmann::json(nullptr) : nlohmann::json(e.op_key)},
          {"n_steps", e.n_steps},
          {"posted", e.posted},
          {"gpu_wait", e.gpu_wait},
          {"peer_wait", e.peer_wait},
          {"in_net", e.in_net},
          {"net_done", e.net_done},
          {"consumed", e.consumed},
          {"op_stopped", e.op_stopped},
          {"start_ns", e.start_ns},
          {"last_ns", e.last_ns}};
}

nlohmann::json link_json(const LinkSnapshot& l) {
  char hash[24], host[24], id[24];
  std::snprintf(hash, sizeof(hash), "0x%016llx", static_cast<unsigned long long>(l.comm_hash));
  std::snprintf(host, sizeof(host), "0x%016llx", static_cast<unsigned long long>(l.peer_host_hash));
  std::snprintf(id, sizeof(id), "0x%016llx", static_cast<unsigned long long>(l.link_id));
  nlohmann::json hist = nlohmann::json::array();
  for (int b = 0; b < kLinkHistBuckets; ++b) {
    if (l.hist[b] != 0) hist.push_back({link_hist_floor(b), l.hist[b]});
  }
  return {{"type", "link"},
          {"index", l.index},
          {"state", link_state_name(l.state)},
          {"source", link_source_name(l.source)},
          {"dir", link_dir_name(l.dir)},
          {"dev", l.dev},
          {"comm_hash", hash},
          {"comm_nranks", l.comm_nranks},
          {"comm_rank", l.comm_rank},
          {"peer_rank", l.peer_rank},
          {"peer_global_rank", l.peer_global_rank},
          {"peer_pid", l.peer_pid},
          {"peer_host_hash", host},
          {"conn_id", l.conn_id},
          {"link_id", id},
          {"open_ns", l.open_ns},
          {"close_ns", l.close_ns},
          {"last_ns", l.last_ns},
          {"transfers", l.transfers},
          {"bytes", l.bytes},
          {"busy_ns", l.busy_ns},
          {"max_ns", l.max_ns},
          {"posted", l.posted},
          {"faults", l.faults},
          {"hist", hist}};
}

DumpStats dump_segment(const SegmentReader& r, std::ostream& out, const DumpOptions& opt) {
  DumpStats st;
  SegmentInfo info = r.info();
  out << segment_json(info, r.owner_alive()).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  for (uint32_t ring = 0; ring < r.n_rings(); ++ring) {
    if (opt.ring >= 0 && int64_t(ring) != opt.ring) continue;
    CommSnapshot c;
    if (!r.comm(ring, &c)) continue;
    out << comm_json(c).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    st.comms++;
    if (!opt.ops) continue;
    uint64_t first = c.head > info.ring_capacity ? c.head - info.ring_capacity : 0;
    if (first > 0) gap(out, ring, 0, first, "overwritten", &st);
    uint64_t gap_from = 0;
    const char* gap_why = nullptr;
    for (uint64_t i = first; i < c.head; ++i) {
      RecordSnapshot s;
      ReadStatus rs = r.read(ring, i, &s);
      if (rs == ReadStatus::kTorn) rs = r.read(ring, i, &s);  // rewritten while copied: retry
      const char* why = nullptr;
      switch (rs) {
        case ReadStatus::kOk: break;
        case ReadStatus::kNotYet: why = "being_written"; break;
        case ReadStatus::kOverwritten: why = "overwritten"; break;
        case ReadStatus::kTorn: why = "torn"; break;
        case ReadStatus::kInvalid: why = "invalid"; break;
      }
      if (why != nullptr) {
        if (gap_why != nullptr && std::string(gap_why) != why) {
          gap(out, ring, gap_from, i, gap_why, &st);
          gap_why = nullptr;
        }
        if (gap_why == nullptr) {
          gap_from = i;
          gap_why = why;
        }
        continue;
      }
      if (gap_why != nullptr) {
        gap(out, ring, gap_from, i, gap_why, &st);
        gap_why = nullptr;
      }
      out << op_json(ring, s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      st.ops++;
    }
    if (gap_why != nullptr) gap(out, ring, gap_from, c.head, gap_why, &st);
  }
  uint32_t cap = 0;
  if (const LinkTableHeader* t = link_table(r, &cap)) {
    LinkTableInfo li = read_link_info(t, cap);
    if (li.claimed > 0 || li.net_state != kNetUnused) {  // no lines while no link was recorded
      out << links_json(li).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      std::vector<LinkSnapshot> links;
      read_links(t, cap, &links);
      for (const LinkSnapshot& l : links) {
        out << link_json(l).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        st.links++;
      }
    }
  }
  if (const ProgressTableHeader* t = progress_table(r, &cap)) {
    ProgressTableInfo pi = read_progress_info(t, cap);
    if (pi.claimed > 0 || pi.request_seq > 0) {  // no lines while nothing was recorded or asked
      out << progress_json(pi).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
      std::vector<ProgressSnapshot> steps;
      read_progress(t, cap, &steps);
      for (const ProgressSnapshot& e : steps)
        out << step_json(e).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
    }
  }
  return st;
}

bool dump_segment_file(const std::string& path, std::ostream& out, const DumpOptions& opt, DumpStats* stats,
                       std::string* error) {
  auto r = SegmentReader::open(path, error);
  if (!r) return false;
  DumpStats st = dump_segment(*r, out, opt);
  if (stats) *stats = st;
  return true;
}

}  // namespace scout::shm
