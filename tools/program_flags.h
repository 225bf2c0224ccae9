// ParseProgramFlags: gflags::ParseCommandLineFlags for chorus's programs (the
// samples, the benches, the simulation), except that --help lists only the
// flags the program defines in its own file (as gflags' --helpshort does),
// not the dozen gflags defines for itself. --helpfull still lists them all.
//
// Header-only and for programs only: the library never reads gflags.
#ifndef CHORUS_TOOLS_PROGRAM_FLAGS_H_
#define CHORUS_TOOLS_PROGRAM_FLAGS_H_

#include <gflags/gflags.h>

DECLARE_bool(help);
DECLARE_bool(helpshort);

namespace chorus {

// Sets the flags from the command line and removes them from argv. With
// --help, prints `usage` and the program's own flags and exits. A program's
// own file is the one named after it (echo_server.cc for echo_server).
inline void ParseProgramFlags(const char* usage, int* argc, char*** argv) {
  gflags::SetUsageMessage(usage);
  gflags::ParseCommandLineNonHelpFlags(argc, argv, /*remove_flags=*/true);
  if (FLAGS_help) {
    FLAGS_help = false;
    FLAGS_helpshort = true;
  }
  gflags::HandleCommandLineHelpFlags();  // exits after printing any help
}

}  // namespace chorus

#endif  // CHORUS_TOOLS_PROGRAM_FLAGS_H_
