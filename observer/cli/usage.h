// Usage errors of the scout command line in words (docs/cli.md, "Usage errors"): the nearest
// subcommand or flag for a typo, the `--` a COMMAND's own flags need after `scout run`, and the
// help to read, each as one line on stderr with exit status 2.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace scout::cli {

// The entry of `known` nearest to `got`: edit distance (insertions, deletions, substitutions,
// adjacent swaps) at most 2 and at most a third of got's length, else the only entry that starts
// with `got` (at least 2 characters); "" when none or several tie.
std::string closest(const std::string& got, const std::vector<std::string>& known);

// The one-line message (without "\n") for parse error `e` of `app`, whose program is named `prog`
// (program_name()) and was given `args` (argv[1..]):
//   "scout: unknown subcommand 'stauts'; did you mean 'status'? (scout --help)"
//   "scout status: unknown flag '--jsn'; did you mean '--json'? (scout status --help)"
//   "scout run: '--ranks' is not a flag of scout run; COMMAND's own flags go after '--': scout run
//    -- build/bin/scout-sim --ranks 2"
// or CLI11's own text with the help to read ("scout explain: id is required (scout explain --help)").
std::string usage_message(const CLI::App& app, const CLI::ParseError& e, const std::string& prog,
                          const std::vector<std::string>& args);

}  // namespace scout::cli
