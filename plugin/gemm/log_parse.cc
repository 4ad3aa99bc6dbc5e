// Parser of cuBLASLt matmul log lines (log_parse.h).
#include "plugin/gemm/log_parse.h"

#include "common/gemm_names.h"
#include "scout/shm_format.h"

namespace scout::gemm {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The bracketed group after `key` ("Adesc=[" ... "]"), where `key` starts the message or follows
// a separator; false if absent or unterminated.
bool group(std::string_view msg, std::string_view key, std::string_view* out) {
  size_t from = 0;
  while (true) {
    size_t at = msg.find(key, from);
    if (at == std::string_view::npos) return false;
    if (at == 0 || is_space(msg[at - 1]) || msg[at - 1] == ']') {
      size_t begin = at + key.size();
      size_t end = msg.find(']', begin);
      if (end == std::string_view::npos) return false;
      *out = msg.substr(begin, end - begin);
      return true;
    }
    from = at + 1;
  }
}

// The value of token "name=value" inside a group (tokens separated by white space).
bool value(std::string_view grp, std::string_view name, std::string_view* out) {
  size_t i = 0;
  while (i < grp.size()) {
    while (i < grp.size() && is_space(grp[i])) ++i;
    size_t j = i;
    while (j < grp.size() && !is_space(grp[j])) ++j;
    std::string_view tok = grp.substr(i, j - i);
    if (tok.size() > name.size() && tok.substr(0, name.size()) == name && tok[name.size()] == '=') {
      *out = tok.substr(name.size() + 1);
      return true;
    }
    i = j;
  }
  return false;
}

// Decimal unsigned integer filling the whole view; false on anything else or overflow.
bool to_u64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  *out = v;
  return true;
}

struct Matrix {
  uint8_t type = 0;
  uint64_t rows = 0, cols = 0;
  bool row_major = false;
  uint64_t batch = 1;
};

bool matrix(std::string_view msg, std::string_view key, Matrix* m) {
  std::string_view g, v;
  if (!group(msg, key, &g)) return false;
  if (!value(g, "type", &v)) return false;
  m->type = shm::gemm_type_id(v);
  if (m->type == shm::kGemmTypeUnknown) return false;
  if (!value(g, "rows", &v) || !to_u64(v, &m->rows)) return false;
  if (!value(g, "cols", &v) || !to_u64(v, &m->cols)) return false;
  if (value(g, "order", &v)) m->row_major = v == "ORDER_ROW" || v == "CUBLASLT_ORDER_ROW";
  if (value(g, "batchCount", &v) && (!to_u64(v, &m->batch) || m->batch == 0 || m->batch > 0xffffffffull)) {
    return false;
  }
  return true;
}

// "OP_N" / "OP_T" / "OP_C" (also with a CUBLAS_ prefix); 0 = N, 1 = T, 2 = C, -1 = bad.
int op_of(std::string_view v) {
  if (v.substr(0, 7) == "CUBLAS_") v.remove_prefix(7);
  if (v == "OP_N") return 0;
  if (v == "OP_T") return 1;
  if (v == "OP_C" || v == "OP_HERMITAN") return 2;
  return -1;
}

}  // namespace

bool is_matmul_function(std::string_view function) {
  constexpr std::string_view kSuffix = "Matmul";
  return function.size() >= kSuffix.size() && function.substr(function.size() - kSuffix.size()) == kSuffix;
}

ParseResult parse_matmul(std::string_view function, std::string_view message, shm::GemmKey* out) {
  if (!is_matmul_function(function)) return ParseResult::kNotMatmul;
  Matrix a, b, c, d;
  if (!matrix(message, "Adesc=[", &a) || !matrix(message, "Bdesc=[", &b)) return ParseResult::kMalformed;
  bool have_c = matrix(message, "Cdesc=[", &c);
  bool have_d = matrix(message, "Ddesc=[", &d);
  if (!have_c && !have_d) return ParseResult::kMalformed;
  if (!have_d) d = c;
  if (!have_c) c = d;
  std::string_view cg, v;
  if (!group(message, "computeDesc=[", &cg)) return ParseResult::kMalformed;
  if (!value(cg, "computeType", &v)) return ParseResult::kMalformed;
  uint8_t compute = shm::gemm_compute_id(v);
  if (compute == shm::kGemmComputeUnknown) return ParseResult::kMalformed;
  uint8_t scale = 0;
  if (value(cg, "scaleType", &v)) {
    scale = shm::gemm_type_id(v);
    if (scale == shm::kGemmTypeUnknown) return ParseResult::kMalformed;
  }
  int opa = 0, opb = 0;
  if (value(cg, "transa", &v) && (opa = op_of(v)) < 0) return ParseResult::kMalformed;
  if (value(cg, "transb", &v) && (opb = op_of(v)) < 0) return ParseResult::kMalformed;

  uint64_t m = d.rows, n = d.cols;
  uint64_t k = opa == 0 ? a.cols : a.rows;
  uint64_t am = opa == 0 ? a.rows : a.cols;
  uint64_t bk = opb == 0 ? b.rows : b.cols;
  uint64_t bn = opb == 0 ? b.cols : b.rows;
  if (m == 0 || n == 0 || k == 0 || am != m || bk != k || bn != n || c.rows != m || c.cols != n) {
    return ParseResult::kMalformed;
  }
  uint64_t batch = d.batch > 1 ? d.batch : a.batch;

  shm::GemmKey key;
  key.m = m;
  key.n = n;
  key.k = k;
  key.batch = uint32_t(batch);
  key.a_type = a.type;
  key.b_type = b.type;
  key.c_type = c.type;
  key.d_type = d.type;
  key.compute = compute;
  key.scale_type = scale;
  key.layout =
      uint8_t((opa == 1 ? shm::kGemmTransA : 0) | (opa == 2 ? shm::kGemmConjA : 0) | (opb == 1 ? shm::kGemmTransB : 0) |
              (opb == 2 ? shm::kGemmConjB : 0) | (a.row_major ? shm::kGemmRowA : 0) |
              (b.row_major ? shm::kGemmRowB : 0) | (d.row_major ? shm::kGemmRowD : 0));
  std::string_view ag;
  if (group(message, "algo=[", &ag)) {
    uint64_t id = 0;
    if (value(ag, "algoId", &v) && to_u64(v, &id) && id < 0x7fffffff) key.algo = int32_t(id);
    if (value(ag, "tile", &v) && v.substr(0, 12) == "MATMUL_TILE_") {
      std::string_view t = v.substr(12);
      size_t x = t.find('x');
      uint64_t tm = 0, tn = 0;
      if (x != std::string_view::npos && to_u64(t.substr(0, x), &tm) && to_u64(t.substr(x + 1), &tn) && tm < 65536 &&
          tn < 65536) {
        key.tile_m = uint16_t(tm);
        key.tile_n = uint16_t(tn);
      }
    }
  }
  *out = key;
  return ParseResult::kOk;
}

}  // namespace scout::gemm
