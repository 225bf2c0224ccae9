#include "chorus/state_machine.h"

namespace chorus {

StateMachine::~StateMachine() = default;

void StateMachine::ExecuteNoop(uint32_t /*group*/, uint64_t /*instance*/) {}

uint64_t StateMachine::GetCheckpointInstanceId(uint32_t /*group*/) const { return 0; }

Status StateMachine::PrepareCheckpoint(const CheckpointInfo& /*info*/,
                                       std::unique_ptr<CheckpointWriter>* /*writer*/) {
  return Status::NotSupported("this state machine makes no checkpoints");
}

Status StateMachine::LoadCheckpoint(const CheckpointInfo& /*info*/, const std::string& /*dir*/) {
  return Status::NotSupported("this state machine loads no checkpoints");
}

CheckpointWriter::~CheckpointWriter() = default;

}  // namespace chorus
