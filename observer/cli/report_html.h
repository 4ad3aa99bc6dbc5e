// `scout report --html FILE`: the job on one self-contained HTML page to attach to an incident
// (docs/cli.md, "scout report --html"): the job header, the findings in the words of `scout
// findings` and `scout explain`, a timeline of findings, checkpoints and replay cycles, per
// finding the picture that convicts (observer/cli/report_pictures.h), the checkpoints and the
// replay cycles with their verdicts.
//
// Self-contained: styles, pictures (inline SVG drawn here) and the page's one small script are
// inside the file; it loads nothing (its Content-Security-Policy forbids every fetch and any
// script but its own, by hash). Every string from the store is escaped (observer/cli/html.h).
// Like the text commands, the page depends only on the store, never on the current time.
#pragma once

#include <string>

#include "observer/store/reader.h"

namespace scout::cli {

// The page for the store `rd` reads. Throws store::Error.
std::string report_html(store::StoreReader& rd);

// The page's stylesheet and script (observer/cli/report_style.cc). The script records script
// errors and policy violations in the page (#script-errors, and the attribute
// data-script-errors on <html>), marks the page data-ready="1" once it ran, and highlights a
// finding everywhere while the pointer is on any of its parts.
const char* report_css();
const char* report_script();

}  // namespace scout::cli
