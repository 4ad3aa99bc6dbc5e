#include "observer/cli/format.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace scout::cli {

namespace {
// Three significant digits of v (>= 1, < 1000) followed by unit.
std::string sig3(double v, const char* unit) {
  char buf[32];
  if (v >= 99.95) {
    std::snprintf(buf, sizeof(buf), "%.0f%s", v, unit);
  } else if (v >= 9.995) {
    std::snprintf(buf, sizeof(buf), "%.1f%s", v, unit);
  } else {
    std::snprintf(buf, sizeof(buf), "%.2f%s", v, unit);
  }
  return buf;
}
}  // namespace

std::string fmt_duration(int64_t ns) {
  if (ns < 0) return "-" + fmt_duration(-ns);
  char buf[32];
  if (ns < 1000) {
    std::snprintf(buf, sizeof(buf), "%" PRId64 "ns", ns);
    return buf;
  }
  double v = static_cast<double>(ns);
  if (ns < 999500) return sig3(v / 1e3, "us");
  if (ns < 999500000) return sig3(v / 1e6, "ms");
  if (ns < 59995000000) return sig3(v / 1e9, "s");
  int64_t s = (ns + 500000000) / 1000000000;
  if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
  } else {
    int64_t m = (s + 30) / 60;
    std::snprintf(buf, sizeof(buf), "%" PRId64 "h%02" PRId64 "m", m / 60, m % 60);
  }
  return buf;
}

std::string fmt_bytes(uint64_t bytes) {
  static const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  char buf[32];
  if (bytes < 1024) {
    std::snprintf(buf, sizeof(buf), "%" PRIu64 "B", bytes);
    return buf;
  }
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1023.95 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  std::snprintf(buf, sizeof(buf), "%.1f%s", v, kUnits[u]);
  return buf;
}

std::string fmt_utc(int64_t ns) {
  if (ns == 0) return "-";
  time_t secs = static_cast<time_t>(ns / 1000000000);
  int ms = static_cast<int>((ns % 1000000000) / 1000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%03d UTC", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return buf;
}

std::string fmt_rel(int64_t ns, int64_t origin) {
  if (ns == 0) return "-";
  int64_t d = ns - origin;
  char buf[40];
  int64_t a = d < 0 ? -d : d;
  int64_t ms = (a + 500000) / 1000000;
  std::snprintf(buf, sizeof(buf), "%c%" PRId64 ".%03" PRId64 "s", d < 0 ? '-' : '+', ms / 1000, ms % 1000);
  return buf;
}

std::string fmt_ago(int64_t ns, int64_t now) {
  if (ns == 0) return "-";
  int64_t d = now - ns;
  if (d < 1000 && d > -1000) return "now";
  if (d < 0) return fmt_duration(-d) + " later";
  return fmt_duration(d) + " ago";
}

std::string fmt_fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string fmt_ranges(std::vector<int> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::string out;
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(values[i]);
    if (j > i) out += "-" + std::to_string(values[j]);
    i = j + 1;
  }
  return out;
}

std::string Table::render(const std::string& indent) const {
  size_t ncol = headers.size();
  for (const auto& r : rows) ncol = std::max(ncol, r.size());
  std::vector<size_t> width(ncol, 0);
  auto measure = [&](const std::vector<std::string>& r) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  };
  measure(headers);
  for (const auto& r : rows) measure(r);
  std::string out;
  auto line = [&](const std::vector<std::string>& r) {
    std::string l = indent;
    for (size_t i = 0; i < ncol; ++i) {
      const std::string cell = i < r.size() ? r[i] : "";
      bool right = i < right_align.size() && right_align[i];
      std::string pad(width[i] - cell.size(), ' ');
      if (i > 0) l += "  ";
      l += right ? pad + cell : cell + pad;
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  if (!headers.empty()) line(headers);
  for (const auto& r : rows) line(r);
  return out;
}

}  // namespace scout::cli
