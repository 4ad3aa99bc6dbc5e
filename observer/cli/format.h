// Text formatting shared by the scout subcommands: durations, sizes, times, aligned tables.
// Output is deterministic for a given store (no reading of the current time), so golden files
// can check it exactly (docs/cli.md, "Times").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scout::cli {

// Duration in ns as people read it: "850ns", "12.3us", "4.56ms", "1.23s", "2m03s", "1h02m".
// Three significant digits below a minute. Negative values get a leading '-'.
std::string fmt_duration(int64_t ns);

// Byte count with binary units: "512B", "1.5KiB", "4.0MiB", "2.0GiB", "1.0TiB" (one decimal).
std::string fmt_bytes(uint64_t bytes);

// CLOCK_REALTIME ns as UTC: "2025-01-31 12:00:05.123 UTC"; "-" for 0.
std::string fmt_utc(int64_t ns);

// `ns` relative to `origin`: "+12.345s" / "-0.500s" (ms precision); "-" when ns is 0.
std::string fmt_rel(int64_t ns, int64_t origin);

// `ns` before `now` for "last progress"-style columns: "3.20s ago"; "now" within 1 us;
// "-" when ns is 0.
std::string fmt_ago(int64_t ns, int64_t now);

// Fixed-point decimal: fmt_fixed(62.91457, 2) = "62.91".
std::string fmt_fixed(double v, int decimals);

// Compact list of integers: {0,1,2,3,5,7,8} -> "0-3,5,7-8" (input need not be sorted).
std::string fmt_ranges(std::vector<int> values);

// An aligned text table: header row, then rows; columns separated by two spaces, no trailing
// spaces; columns whose `right_align` flag is set are right-aligned. Every line ends in '\n'
// and starts with `indent`.
struct Table {
  std::vector<std::string> headers;
  std::vector<bool> right_align;  // per column; missing = left
  std::vector<std::vector<std::string>> rows;
  std::string render(const std::string& indent = "") const;
};

}  // namespace scout::cli
