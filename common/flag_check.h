// CLI11 check for the tools' floating-point flags (scout-observer's and scout's): a finite number in [min, max], parsed by the
// same rule as SCOUT_* Double variables (config::parse_double), so "nan", "inf" and "1e999" are
// refused with one line (CLI::Range compares with <, which a NaN passes).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "scout/config.h"

namespace scout::config {

inline CLI::Validator finite_range(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& v) -> std::string {
        double d = 0;
        std::string why;
        if (!parse_double(v, min, max, &d, &why)) return "'" + v + "': " + why;
        return "";
      },
      "FLOAT", "finite number");
}

}  // namespace scout::config
