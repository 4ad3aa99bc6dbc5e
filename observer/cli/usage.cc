// Usage errors in words (usage.h).
#include "observer/cli/usage.h"

#include <CLI/CLI.hpp>

#include <algorithm>

#include "observer/cli/common.h"

namespace scout::cli {
namespace {

// Optimal string alignment distance (Damerau-Levenshtein with adjacent swaps).
size_t distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

// The chain of subcommands the parse reached, outermost first (at least the app itself).
std::vector<const CLI::App*> parsed_chain(const CLI::App& app) {
  std::vector<const CLI::App*> chain = {&app};
  for (;;) {
    const CLI::App* next = nullptr;
    for (const CLI::App* s : chain.back()->get_subcommands([](const CLI::App* a) { return a->parsed(); })) next = s;
    if (next == nullptr) break;
    chain.push_back(next);
  }
  return chain;
}

std::vector<std::string> flag_names(const CLI::App* a) {
  std::vector<std::string> out;
  for (const CLI::Option* o : a->get_options()) {
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
  }
  return out;
}

std::vector<std::string> subcommand_names(const CLI::App* a) {
  std::vector<std::string> out;
  for (const CLI::App* s : a->get_subcommands([](const CLI::App*) { return true; })) out.push_back(s->get_name());
  return out;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

}  // namespace

std::string closest(const std::string& got, const std::vector<std::string>& known) {
  if (got.empty()) return "";
  std::string best;
  size_t best_d = std::min<size_t>(2, std::max<size_t>(1, got.size() / 3)) + 1;
  bool tie = false;
  for (const std::string& k : known) {
    const size_t d = distance(got, k);
    if (d < best_d) {
      best_d = d;
      best = k;
      tie = false;
    } else if (d == best_d && k != best) {
      tie = true;
    }
  }
  if (!best.empty() && !tie) return best;
  std::string prefixed;
  for (const std::string& k : known) {
    if (got.size() >= 2 && k.size() > got.size() && k.compare(0, got.size(), got) == 0) {
      if (!prefixed.empty()) return "";
      prefixed = k;
    }
  }
  return prefixed;
}

std::string usage_message(const CLI::App& app, const CLI::ParseError& e, const std::string& prog,
                          const std::vector<std::string>& args) {
  const std::vector<const CLI::App*> chain = parsed_chain(app);
  std::string name = "scout", runnable = prog;
  for (size_t i = 1; i < chain.size(); ++i) {
    name += " " + chain[i]->get_name();
    runnable += " " + chain[i]->get_name();
  }
  const std::string help = " (" + runnable + " --help)";
  const CLI::App* cur = chain.back();
  std::vector<std::string> extras;
  for (const CLI::App* a : chain) {
    for (const std::string& x : a->remaining()) {
      if (std::find(extras.begin(), extras.end(), x) == extras.end()) extras.push_back(x);
    }
  }
  // Keep the order of the command line.
  std::stable_sort(extras.begin(), extras.end(), [&](const std::string& a, const std::string& b) {
    return std::find(args.begin(), args.end(), a) < std::find(args.begin(), args.end(), b);
  });
  const bool extra_error = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
  // "scout ckpt lst": the word that should have been a subcommand is left over.
  const bool missing_sub = dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && !extras.empty() &&
                           extras.front()[0] != '-' && !subcommand_names(chain.back()).empty();
  if (!extra_error && !missing_sub) return name + ": " + e.what() + help;
  if (extras.empty()) return name + ": " + e.what() + help;
  const std::string& x = extras.front();
  // `scout run [flags] COMMAND --flag`: the command's flags reached scout.
  if (cur->get_name() == "run" && cur->get_parent() == &app && x.size() > 1 && x[0] == '-') {
    const auto words = cur->get_option("command")->as<std::vector<std::string>>();
    const auto run = std::find(args.begin(), args.end(), "run");
    const auto first = words.empty() ? args.end() : std::find(run, args.end(), words.front());
    if (run != args.end() && first != args.end()) {
      std::string hint = prog + " run";
      for (auto it = run + 1; it != first; ++it) hint += " " + shell_word(*it);
      hint += " --";
      for (auto it = first; it != args.end(); ++it) hint += " " + shell_word(*it);
      return name + ": " + quoted(x) + " is not a flag of scout run; COMMAND's own flags go after '--': " + hint;
    }
  }
  if (x.size() > 1 && x[0] == '-') {
    const std::string flag = x.substr(0, x.find('='));
    const std::string near = closest(flag, flag_names(cur));
    return name + ": unknown flag " + quoted(flag) + (near.empty() ? "" : "; did you mean " + quoted(near) + "?") + help;
  }
  const std::vector<std::string> subs = subcommand_names(cur);
  if (!subs.empty()) {
    const std::string near = closest(x, subs);
    return name + ": unknown subcommand " + quoted(x) + (near.empty() ? "" : "; did you mean " + quoted(near) + "?") +
           help;
  }
  return name + ": unexpected argument " + quoted(x) + help;
}

}  // namespace scout::cli
