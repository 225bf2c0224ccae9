// How a Node's Options become each group's paxos::CoreOptions.
#ifndef CHORUS_NODE_CORE_OPTIONS_H_
#define CHORUS_NODE_CORE_OPTIONS_H_

#include <cstdint>
#include <string>

#include "chorus/options.h"
#include "paxos/options.h"

namespace chorus {

// The text a membership entry keeps as a member's address: NodeInfo's
// "[id@]host:port" with the id always written.
std::string MemberAddress(const NodeInfo& node);
// The reverse: the NodeInfo of member `id` recorded as `address` (its id is
// `id` whatever the text derives). InvalidArgument for text that does not parse.
Status ParseMemberAddress(uint64_t id, const std::string& address, NodeInfo* node);

// The core options of `group`. The seed is left at its default: the caller
// draws a fresh one for every start (see CoreOptions::seed).
paxos::CoreOptions MakeCoreOptions(const Options& options, uint32_t group);

// Bytes a transport frame adds around a core message: the group prefix the
// runtime puts in front, and slack for a transport's own header.
constexpr uint32_t kFrameOverheadBytes = 4 + 256;

}  // namespace chorus

#endif  // CHORUS_NODE_CORE_OPTIONS_H_
