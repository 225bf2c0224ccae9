// RunMemberCommand: the membership commands of chorus's sample servers
// (echo_server's "!add host:port" stdin lines, kv_server's CHORUS.ADDMEMBER),
// one verb each, on the Node API:
//   members                     GetMembership
//   add     [id@]host:port      AddMember (a follower first, a voter once caught up)
//   follower [id@]host:port     AddFollower
//   promote id                  PromoteFollower
//   remove  id                  RemoveMember
//   change  old_id [id@]host:port   ChangeMember (replace old_id by the new node)
// The calls block until the change is in force or fails (see node.h).
//
// Header-only and for programs only.
#ifndef CHORUS_TOOLS_MEMBER_COMMANDS_H_
#define CHORUS_TOOLS_MEMBER_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/node.h"
#include "chorus/status.h"
#include "chorus/transport.h"
#include "utils/coding.h"

namespace chorus {

// "id@host:port", or "ip:port" when the IPv4 host and port derive the id
// (the membership records every id explicitly).
inline std::string DisplayAddress(const NodeInfo& node) {
  NodeInfo plain = node;
  plain.node_id = 0;
  return plain.id() == node.id() ? plain.ToString() : node.ToString();
}

// "id@host:port" of a member, with its id always shown.
inline std::string MemberText(const MemberInfo& m) {
  NodeInfo address = m.node;
  address.node_id = 0;  // ToString without the id: it is printed first
  return std::to_string(m.node.id()) + "@" + address.ToString();
}

// The members of `info` that are voters (or followers), MemberText comma
// separated; "-" for none.
inline std::string MemberList(const MembershipInfo& info, bool voters) {
  std::string out;
  for (const MemberInfo& m : info.members) {
    if (m.voter != voters) continue;
    if (!out.empty()) out += ",";
    out += MemberText(m);
  }
  return out.empty() ? "-" : out;
}

// "version=<v> active_from=<a> pending=<0|1> voters=<list> followers=<list>".
inline std::string MembershipLine(const MembershipInfo& info) {
  return "version=" + std::to_string(info.version) +
         " active_from=" + std::to_string(info.active_from) +
         " pending=" + (info.pending ? "1" : "0") + " voters=" + MemberList(info, true) +
         " followers=" + MemberList(info, false);
}

inline bool ParseNodeId(const std::string& text, uint64_t* id) {
  return ParsePositiveDecimal(text, UINT64_MAX, id);
}

// Runs verb `verb` with `args` on `group`. "members" fills *info. Returns
// the call's Status, or InvalidArgument for an unknown verb or bad
// arguments (naming the usage).
inline Status RunMemberCommand(Node* node, uint32_t group, const std::string& verb,
                               const std::vector<std::string>& args, MembershipInfo* info) {
  auto usage = [&verb](const char* want) {
    return Status::InvalidArgument(verb + ": usage: " + verb + " " + want);
  };
  NodeInfo target;
  uint64_t id = 0;
  if (verb == "members") {
    if (!args.empty()) return usage("(no arguments)");
    return node->GetMembership(group, info);
  }
  if (verb == "add" || verb == "follower") {
    if (args.size() != 1) return usage("[id@]host:port");
    Status s = NodeInfo::Parse(args[0], &target);
    if (!s.ok()) return s;
    return verb == "add" ? node->AddMember(group, target) : node->AddFollower(group, target);
  }
  if (verb == "promote" || verb == "remove") {
    if (args.size() != 1 || !ParseNodeId(args[0], &id)) return usage("node_id");
    return verb == "promote" ? node->PromoteFollower(group, id) : node->RemoveMember(group, id);
  }
  if (verb == "change") {
    if (args.size() != 2 || !ParseNodeId(args[0], &id)) return usage("old_node_id [id@]host:port");
    Status s = NodeInfo::Parse(args[1], &target);
    if (!s.ok()) return s;
    return node->ChangeMember(group, id, target);
  }
  return Status::InvalidArgument("unknown membership command '" + verb +
                                 "' (members, add, follower, promote, remove, change)");
}

}  // namespace chorus

#endif  // CHORUS_TOOLS_MEMBER_COMMANDS_H_
