// Copyright (c) chorus authors.
//
// A small blocking RESP2 client for the nemesis: one TCP connection to one
// kv_server, one command at a time, every wait bounded by a timeout (a
// paused or partitioned node must never hang a client).

#ifndef CHORUS_UNITTEST_NEMESIS_RESP_CLIENT_H_
#define CHORUS_UNITTEST_NEMESIS_RESP_CLIENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace nemesis {

struct RespReply {
  enum class Type { kSimple, kError, kInteger, kBulk, kNil, kArray };
  Type type = Type::kNil;
  std::string text;  // kSimple, kError (without the '-'), kBulk
  int64_t integer = 0;
  std::vector<RespReply> elements;  // kArray
};

class RespClient {
 public:
  RespClient() = default;
  ~RespClient();
  RespClient(const RespClient&) = delete;
  RespClient& operator=(const RespClient&) = delete;

  // Connects to ip:port within timeout_ms; later commands wait at most
  // timeout_ms for their reply. Closes any previous connection first.
  Status Connect(const std::string& ip, int port, int timeout_ms);
  bool connected() const { return fd_ >= 0; }
  void Close();

  // Sends one command and reads its reply. OK with *reply (an error reply
  // is OK too: reply->type kError); Timeout when no whole reply came in
  // time; IOError when the connection broke. After a failure the
  // connection is closed (a late reply must never be taken for the next
  // command's).
  Status Command(const std::vector<std::string>& args, RespReply* reply);

 private:
  Status ReadReply(RespReply* reply, int depth);
  Status ReadLine(std::string* line);
  Status ReadBytes(size_t n, std::string* out);
  Status Fill();

  int fd_ = -1;
  int timeout_ms_ = 1000;
  int64_t deadline_ns_ = 0;  // of the command being read
  std::string in_;           // bytes received, not yet parsed
};

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_RESP_CLIENT_H_
