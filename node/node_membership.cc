// NodeImpl's membership calls (chorus/node.h). Placeholder until the
// membership runtime lands: every call answers NotSupported.
#include "node/node_impl.h"

namespace chorus {

namespace {
Status NotBuilt() { return Status::NotSupported("membership changes are not built yet"); }
}  // namespace

Status NodeImpl::GetMembership(uint32_t, MembershipInfo*) const { return NotBuilt(); }
Status NodeImpl::AddMember(uint32_t, const NodeInfo&) { return NotBuilt(); }
Status NodeImpl::AddFollower(uint32_t, const NodeInfo&) { return NotBuilt(); }
Status NodeImpl::PromoteFollower(uint32_t, uint64_t) { return NotBuilt(); }
Status NodeImpl::RemoveMember(uint32_t, uint64_t) { return NotBuilt(); }
Status NodeImpl::ChangeMember(uint32_t, uint64_t, const NodeInfo&) { return NotBuilt(); }

}  // namespace chorus
