// Test helper: a strict checker of the Prometheus text exposition format 0.0.4, used where
// promtool (Debian package prometheus) may be missing.
#pragma once

#include <string>

namespace scout::testing {

// Every sample belongs to a family declared by exactly one "# HELP" and one "# TYPE" line before
// it; families are contiguous; names and label names are valid; label values are properly
// escaped; values parse as floats; counters end in _total; no series repeats. Returns "" or the
// first problem ("line N: what").
std::string check_exposition(const std::string& text);

// `promtool check metrics` on `text`: "" when it passes without complaint, else its output;
// "skip" when promtool is not installed.
std::string promtool_check(const std::string& text);

}  // namespace scout::testing
