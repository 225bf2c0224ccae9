#include "utils/status.h"

#include <cstring>

namespace chorus {

namespace {
const std::string& EmptyString() {
  static const std::string* const empty = new std::string();
  return *empty;
}
}  // namespace

Status Status::FromErrno(const std::string& context, int err) {
  char buf[128];
  // GNU strerror_r may return a pointer to a static string instead of filling buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return Status(Code::kIOError, context + ": " + text);
}

const std::string& Status::message() const { return msg_ ? *msg_ : EmptyString(); }

const char* Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kNotFound: return "NotFound";
    case Code::kCorruption: return "Corruption";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kIOError: return "IOError";
    case Code::kTimeout: return "Timeout";
    case Code::kBusy: return "Busy";
    case Code::kStopped: return "Stopped";
    case Code::kTooLarge: return "TooLarge";
    case Code::kConflict: return "Conflict";
    case Code::kNotSupported: return "NotSupported";
    case Code::kNotMaster: return "NotMaster";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(CodeName(code_)) + ": " + message();
}

}  // namespace chorus
