// KvSession: one client connection of kv_server, without the socket: bytes
// in, replies out, in request order.
//
// The requests of one read (a pipeline) are served in runs: consecutive
// writes become ONE paxos value (KvBackend::Write; KvStore executes them in
// order and answers each), consecutive reads share ONE read barrier (a
// barrier that began after every one of them arrived serves them all
// linearizably), everything else is answered on the spot. So a client that
// pipelines 16 SETs costs one proposal, and the replies still come back in
// the order of the requests.
#ifndef CHORUS_SAMPLE_KV_KV_SESSION_H_
#define CHORUS_SAMPLE_KV_KV_SESSION_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "sample/kv/kv_ops.h"
#include "sample/kv/resp.h"

namespace chorus {
namespace kv {

// Counters of every session of a server (INFO prints them).
struct SessionStats {
  std::atomic<uint64_t> requests{0};
  // Write ops whose value was chosen and executed (their replies were sent,
  // whatever they said: "+OK", or "$-1" for a SET NX that found the key).
  std::atomic<uint64_t> write_ops_acked{0};
  // Requests answered with an error by the server itself (unknown command,
  // wrong arguments, a failed proposal or barrier; not e.g. INCR of a
  // string, which the state machine answers).
  std::atomic<uint64_t> failed_requests{0};
  std::atomic<uint64_t> protocol_errors{0};
  std::atomic<uint64_t> connections{0};
};

// What a session needs from the replica (kv_server.cc implements it on a
// chorus Node and a KvStore; tests fake it).
class KvBackend {
 public:
  virtual ~KvBackend();
  // Proposes `value` (EncodeOps) and waits until it was executed here: OK
  // with *replies, one RESP reply per op. Otherwise the failure (Busy: never
  // proposed; Timeout, Stopped...: the outcome is unknown).
  virtual Status Write(const std::string& value, std::string* replies) = 0;
  // Waits until a local read is linearizable (or returns at once with
  // stale reads on). Busy / Timeout / ...: no read may be served.
  virtual Status ReadBarrier() = 0;
  // Local reads of the state machine.
  virtual Status Get(const std::string& key, std::string* value) = 0;
  virtual Status Count(uint64_t* keys, uint32_t* digest) = 0;
  // The text of INFO (lines "field:value\r\n", "# Section" headers).
  virtual std::string Info() = 0;
  // A membership command of the replica's chorus group (the CHORUS.*
  // commands below): `verb` is tools/member_commands.h's (members, add,
  // follower, promote, remove, change), `args` its arguments. OK with
  // *lines (what to show; none: "+OK") or the call's failure. It may block
  // for as long as the change takes. Default: NotSupported.
  virtual Status Membership(const std::string& verb, const std::vector<std::string>& args,
                            std::vector<std::string>* lines);
  // Hands the group's mastership to member `node_id` (CHORUS.TRANSFER):
  // Node::TransferMaster on this replica, so it works on the master only
  // (NotMaster elsewhere). Default: NotSupported.
  virtual Status TransferMaster(uint64_t node_id);
  virtual SessionStats* stats() = 0;
};

struct SessionOptions {
  RespLimits limits;
  // Most bytes of one proposed value (several writes of a pipeline). Keep it
  // under Options::max_value_bytes. Default 1 MiB; a single write larger
  // than this still goes, alone.
  size_t max_value_bytes = 1u << 20;
  // Most write ops in one value. Default 1024.
  size_t max_ops_per_value = 1024;
  // Largest reply of one read (an MGET of many large values): an error
  // beyond it. Default 64 MiB.
  size_t max_reply_bytes = 64u << 20;
};

// Besides the Redis commands, a session serves chorus's membership
// commands (KvBackend::Membership), answered when the change is in force:
//   CHORUS.MEMBERS                          an array: "version <v>",
//                                           "active_from <i>", "pending <0|1>",
//                                           "role <this node's role>", then
//                                           "voter <id@host:port>" /
//                                           "follower <id@host:port>" per member
//   CHORUS.ADDMEMBER [id@]host:port         +OK (a follower, then a voter)
//   CHORUS.ADDFOLLOWER [id@]host:port       +OK
//   CHORUS.PROMOTE id                       +OK
//   CHORUS.REMOVEMEMBER id                  +OK
//   CHORUS.CHANGEMEMBER old_id [id@]host:port  +OK (replaces old_id by the new node)
//   CHORUS.TRANSFER id                      +OK once this node, the master,
//                                           sent the hand-over to member id
//                                           (KvBackend::TransferMaster);
//                                           "ERR NotMaster: ..." on another node
// A failure is an error reply: "TRYAGAIN Busy: ..." (no master, another
// change in progress, an unsafe removal: retry later), "TIMEOUT outcome
// unknown: ...", or "ERR <Status>".
//
// And one replicated write of its own, proposed and batched like SET:
//   CHORUS.CAS key expected new             :1 when the key held `expected`
//                                           and now holds `new`, :0 when it
//                                           held something else (unchanged).
//                                           expected "" means "the key is
//                                           absent" (a key holding "" never
//                                           matches); new must not be "".
// Like every write it is decided by the state machine on every replica in
// log order, so it is atomic against every other write.
class KvSession {
 public:
  KvSession(KvBackend* backend, const SessionOptions& options, uint64_t client_id)
      : backend_(backend), options_(options), parser_(options.limits), client_id_(client_id) {}

  // Takes bytes read from the connection and appends to *out the replies of
  // every request they complete, in order (blocking on the backend meanwhile).
  // Returns false when the connection must be closed once *out is sent: a
  // protocol error (its error reply is the last thing in *out) or QUIT.
  bool OnData(const char* data, size_t n, std::string* out);

 private:
  struct Item;
  void Serve(std::vector<Item>* items, std::string* out);
  void ServeWrites(std::vector<Item>* items, size_t begin, size_t end, std::string* out);
  void ServeReads(std::vector<Item>* items, size_t begin, size_t end, std::string* out);
  void ServeRead(const RespRequest& r, const std::string& name, std::string* out);
  // A command answered by the server alone. false: close after it (QUIT).
  bool ServeLocal(const RespRequest& r, const std::string& name, std::string* out);
  void ServeMembership(const RespRequest& r, const std::string& name, std::string* out);
  void Error(std::string* out, const std::string& msg);

  KvBackend* const backend_;
  const SessionOptions options_;
  RespParser parser_;
  const uint64_t client_id_;
  std::string name_;  // CLIENT SETNAME
};

// The error reply for a failed proposal or barrier: "TRYAGAIN ..." when it
// is safe to retry (Busy: nothing was proposed), "TIMEOUT outcome unknown:
// ..." when the value may still be chosen, "ERR ..." otherwise.
std::string FailureReply(const Status& s);

}  // namespace kv
}  // namespace chorus

#endif  // CHORUS_SAMPLE_KV_KV_SESSION_H_
