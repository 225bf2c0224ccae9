#include "chorus/log_storage.h"

namespace chorus {

LogStorage::~LogStorage() = default;

Status LogStorage::SetVariable(const std::string& name, const std::string& value, bool sync) {
  LogWriteBatch batch;
  batch.variables.emplace_back(name, value);
  return Write(batch, sync);
}

}  // namespace chorus
