// The kv sample's commands: which requests are writes (proposed through
// chorus and executed by KvStore on every replica), how a write becomes
// bytes of a paxos value, and back.
//
// A value holds one or more write ops: kv_server puts the consecutive
// writes of a pipelined connection into one value, so that a connection
// sending 16 SETs at once costs one proposal (KvStore executes them in
// order and answers each).
#ifndef CHORUS_SAMPLE_KV_KV_OPS_H_
#define CHORUS_SAMPLE_KV_KV_OPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "sample/kv/resp.h"

namespace chorus {
namespace kv {

enum class OpCode : uint8_t {
  kSet = 1,     // args: key value; flags kNx / kXx
  kDel = 2,     // args: key...
  kIncrBy = 3,  // args: key; delta
  kMSet = 4,    // args: key value key value ...
  kCas = 5,     // args: key expected new (CHORUS.CAS; expected "" = absent)
};

enum OpFlags : uint8_t { kNx = 1, kXx = 2 };

struct WriteOp {
  OpCode code = OpCode::kSet;
  uint8_t flags = 0;
  int64_t delta = 0;
  std::vector<std::string> args;
};

// The command name in upper case ("set" -> "SET").
std::string Upper(const std::string& name);

// `s` with ASCII upper case letters made lower case ("SET" -> "set").
std::string Lower(const std::string& s);

// Redis's reply to a command given the wrong number of arguments:
// "ERR wrong number of arguments for 'set' command" (the name lower-cased).
std::string WrongArgs(const std::string& name);

// Whether `upper_name` is a write: SET DEL INCR INCRBY DECR DECRBY MSET
// CHORUS.CAS.
bool IsWriteCommand(const std::string& upper_name);

// Turns a write request (its name already upper-cased in `upper_name`) into
// *op, taking the request's arguments. Returns "" on success, else the error
// reply's text (e.g. "ERR wrong number of arguments for 'set' command"),
// decided before anything is proposed.
std::string MakeWriteOp(const std::string& upper_name, RespRequest* request, WriteOp* op);

// Bytes of one op in a value (what EncodeOps adds for it).
size_t EncodedSize(const WriteOp& op);

// Appends the value that holds `ops` to *value (which must be empty).
void EncodeOps(const std::vector<WriteOp>& ops, std::string* value);

// Parses a value made by EncodeOps. false on damage (then *ops is partial).
bool DecodeOps(const std::string& value, std::vector<WriteOp>* ops);

}  // namespace kv
}  // namespace chorus

#endif  // CHORUS_SAMPLE_KV_KV_OPS_H_
