// How a Node's Options become each group's paxos::CoreOptions.
#ifndef CHORUS_NODE_CORE_OPTIONS_H_
#define CHORUS_NODE_CORE_OPTIONS_H_

#include <cstdint>

#include "chorus/options.h"
#include "paxos/options.h"

namespace chorus {

// The core options of `group`. The seed is left at its default: the caller
// draws a fresh one for every start (see CoreOptions::seed).
paxos::CoreOptions MakeCoreOptions(const Options& options, uint32_t group);

// Bytes a transport frame adds around a core message: the group prefix the
// runtime puts in front, and slack for a transport's own header.
constexpr uint32_t kFrameOverheadBytes = 4 + 256;

}  // namespace chorus

#endif  // CHORUS_NODE_CORE_OPTIONS_H_
