// A finding's evidence in words (`scout explain`). Kinds whose evidence keys are documented in
// docs/findings.md get a dedicated rendering; anything else (and any key a dedicated renderer
// does not know) is rendered generically: nested keys as indented lines, lists of numbers
// compacted, *_ns values shown as durations or as times relative to the job start.
#pragma once

#include <cstdint>
#include <string>

#include "observer/model/finding.h"

namespace scout::cli {

// Lines (each ending in '\n', indented by `indent`) describing f.evidence. `origin_ns` is the
// job start used for times. Never throws on unexpected shapes.
std::string render_evidence(const obs::Finding& f, int64_t origin_ns, const std::string& indent);

// Generic rendering of any JSON value (the fallback of render_evidence).
std::string render_json_generic(const nlohmann::json& j, int64_t origin_ns, const std::string& indent);

}  // namespace scout::cli
