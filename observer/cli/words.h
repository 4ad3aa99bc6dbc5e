// Findings and their parts in words, shared by `scout status`, `scout findings` and
// `scout explain`.
#pragma once

#include <string>
#include <vector>

#include "observer/model/finding.h"

namespace scout::cli {

// "rank 5 (node1, pid 4242, GPU GPU-5)"; parts that are unknown are left out; "rank ?" for -1.
std::string suspect_words(const obs::Suspect& s);
// Global ranks of the suspects, compact: "4-5,7"; "-" when none.
std::string suspect_ranks(const std::vector<obs::Suspect>& v);
// "dp" (or the hash when the name is empty); "-" when the finding has no communicator.
std::string comm_words(const obs::Finding& f);
// "AllReduce #40"; "-" without key.
std::string key_words(const obs::Finding& f);

}  // namespace scout::cli
