#include "chorus/state_machine.h"

namespace chorus {

StateMachine::~StateMachine() = default;

uint64_t StateMachine::GetCheckpointInstanceId(uint32_t /*group*/) const { return 0; }

}  // namespace chorus
