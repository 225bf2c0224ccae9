// Copyright (c) chorus authors.
//
// Status: the result of every fallible call in chorus. Either ok, or an error
// code plus a human-readable message that says what went wrong and where.
//
// Status is a small value type: cheap to copy when ok (no allocation), and
// safe to return from any thread. It is not internally synchronized: do not
// mutate one Status from two threads at once.

#ifndef CHORUS_STATUS_H_
#define CHORUS_STATUS_H_

#include <memory>
#include <string>

namespace chorus {

class Status {
 public:
  enum class Code : int {
    kOk = 0,
    kNotFound = 1,         // the thing asked for does not exist
    kCorruption = 2,       // stored or received bytes fail their checksum / parse
    kInvalidArgument = 3,  // the caller passed something invalid
    kIOError = 4,          // the OS refused (open, write, fsync, socket...)
    kTimeout = 5,          // a deadline passed before the work finished
    kBusy = 6,             // overload protection rejected the request
    kStopped = 7,          // the component is stopped (or stopping)
    kTooLarge = 8,         // a value or frame is larger than the configured limit
    kConflict = 9,         // another value won the instance / lost mastership
    kNotSupported = 10,    // the operation is not available in this build/backend
    kNotMaster = 11,       // only the group's master does this; the message names it
  };

  // An ok status.
  Status() noexcept = default;

  static Status OK() { return Status(); }
  static Status NotFound(const std::string& msg) { return Status(Code::kNotFound, msg); }
  static Status Corruption(const std::string& msg) { return Status(Code::kCorruption, msg); }
  static Status InvalidArgument(const std::string& msg) {
    return Status(Code::kInvalidArgument, msg);
  }
  static Status IOError(const std::string& msg) { return Status(Code::kIOError, msg); }
  // An IOError whose message ends with strerror(err).
  static Status FromErrno(const std::string& context, int err);
  static Status Timeout(const std::string& msg) { return Status(Code::kTimeout, msg); }
  static Status Busy(const std::string& msg) { return Status(Code::kBusy, msg); }
  static Status Stopped(const std::string& msg) { return Status(Code::kStopped, msg); }
  static Status TooLarge(const std::string& msg) { return Status(Code::kTooLarge, msg); }
  static Status Conflict(const std::string& msg) { return Status(Code::kConflict, msg); }
  static Status NotSupported(const std::string& msg) {
    return Status(Code::kNotSupported, msg);
  }
  // This node is not the group's master (and does not forward): the message
  // says which node is, when one is known.
  static Status NotMaster(const std::string& msg) { return Status(Code::kNotMaster, msg); }

  Status(const Status& other) : code_(other.code_), msg_(other.msg_) {}
  Status& operator=(const Status& other) {
    code_ = other.code_;
    msg_ = other.msg_;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsTimeout() const { return code_ == Code::kTimeout; }
  bool IsBusy() const { return code_ == Code::kBusy; }
  bool IsStopped() const { return code_ == Code::kStopped; }
  bool IsTooLarge() const { return code_ == Code::kTooLarge; }
  bool IsConflict() const { return code_ == Code::kConflict; }
  bool IsNotSupported() const { return code_ == Code::kNotSupported; }
  bool IsNotMaster() const { return code_ == Code::kNotMaster; }

  // The same code with "context: " put in front of the message; ok stays ok.
  Status Annotate(const std::string& context) const {
    return ok() ? *this : Status(code_, context + ": " + message());
  }

  // The message alone ("" when ok).
  const std::string& message() const;
  // "OK", or "<code name>: <message>".
  std::string ToString() const;

  static const char* CodeName(Code code);

 private:
  Status(Code code, const std::string& msg)
      : code_(code), msg_(std::make_shared<const std::string>(msg)) {}

  Code code_ = Code::kOk;
  // Shared and immutable: copies of an error status share one string.
  std::shared_ptr<const std::string> msg_;
};

}  // namespace chorus

#endif  // CHORUS_STATUS_H_
