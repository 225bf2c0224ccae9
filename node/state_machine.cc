#include "chorus/state_machine.h"

namespace chorus {

StateMachine::~StateMachine() = default;

void StateMachine::ExecuteNoop(uint32_t /*group*/, uint64_t /*instance*/) {}

uint64_t StateMachine::GetCheckpointInstanceId(uint32_t /*group*/) const { return 0; }

}  // namespace chorus
