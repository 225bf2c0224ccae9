// lincheck: checks a saved history (unittest/nemesis/history.h, one
// operation per line, as the nemesis writes it) for linearizability and
// prints the checker's report (CheckResult::Describe).
//
//   lincheck [--max_seconds=S] [--minimize=false] HISTORY_FILE
//
// Exit status: 0 linearizable; 1 a violation (the report shows a minimal
// failing sub-history); 2 undecided (the time ran out), bad usage, or a
// file that cannot be read or parsed.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "unittest/nemesis/history.h"
#include "unittest/nemesis/linearizability.h"
#include "tools/program_flags.h"

DEFINE_double(max_seconds, 60, "give up (exit 2) after this long: search and shrinking together");
DEFINE_bool(minimize, true, "shrink a violation to a minimal failing sub-history");

int main(int argc, char** argv) {
  chorus::ParseProgramFlags(
      "checks a history file for linearizability: lincheck [--max_seconds=S] HISTORY_FILE\n"
      "exit 0 linearizable, 1 violation, 2 undecided or bad input",
      &argc, &argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: lincheck [--max_seconds=S] [--minimize=false] HISTORY_FILE\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "lincheck: cannot open %s\n", argv[1]);
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    std::fprintf(stderr, "lincheck: cannot read %s\n", argv[1]);
    return 2;
  }
  std::vector<chorus::nemesis::Operation> history;
  const chorus::Status s = chorus::nemesis::DecodeHistory(text.str(), &history);
  if (!s.ok()) {
    std::fprintf(stderr, "lincheck: %s: %s\n", argv[1], s.ToString().c_str());
    return 2;
  }
  chorus::nemesis::CheckOptions options;
  options.max_seconds = FLAGS_max_seconds;
  options.minimize = FLAGS_minimize;
  const chorus::nemesis::CheckResult result = chorus::nemesis::CheckLinearizable(history, options);
  std::fputs(result.Describe().c_str(), stdout);
  switch (result.verdict) {
    case chorus::nemesis::CheckResult::Verdict::kLinearizable: return 0;
    case chorus::nemesis::CheckResult::Verdict::kViolation: return 1;
    case chorus::nemesis::CheckResult::Verdict::kUnknown: return 2;
  }
  return 2;
}
