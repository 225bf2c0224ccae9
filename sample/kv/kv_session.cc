#include "sample/kv/kv_session.h"

#include <cstdint>
#include <cstdio>

#include "tools/member_commands.h"

namespace chorus {
namespace kv {

KvBackend::~KvBackend() = default;

Status KvBackend::Membership(const std::string&, const std::vector<std::string>&,
                             std::vector<std::string>*) {
  return Status::NotSupported("this server has no membership");
}

Status KvBackend::TransferMaster(uint64_t) {
  return Status::NotSupported("this server has no master to transfer");
}

struct KvSession::Item {
  enum Kind { kWrite, kRead, kLocal, kReply };
  Kind kind = kReply;
  std::string name;   // upper case
  RespRequest request;
  WriteOp op;         // kWrite
  std::string reply;  // kReply: the error decided while parsing
};

namespace {

bool IsReadCommand(const std::string& n) {
  return n == "GET" || n == "MGET" || n == "EXISTS" || n == "DBSIZE" || n == "DEBUG";
}

// Redis's wording, which clients show as is.
std::string UnknownCommand(const RespRequest& r) {
  std::string msg = "ERR unknown command '" + r[0].substr(0, 128) + "', with args beginning with: ";
  for (size_t i = 1; i < r.size() && i < 4; ++i) msg += "'" + r[i].substr(0, 64) + "' ";
  return msg;
}

}  // namespace

std::string FailureReply(const Status& s) {
  if (s.IsBusy()) return "TRYAGAIN " + s.ToString();
  if (s.IsTimeout()) return "TIMEOUT outcome unknown: " + s.ToString();
  return "ERR " + s.ToString();
}

void KvSession::Error(std::string* out, const std::string& msg) {
  backend_->stats()->failed_requests.fetch_add(1, std::memory_order_relaxed);
  AppendError(out, msg);
}

bool KvSession::OnData(const char* data, size_t n, std::string* out) {
  parser_.Feed(data, n);
  std::vector<Item> items;
  RespRequest r;
  RespParser::Result res;
  while ((res = parser_.Next(&r)) == RespParser::Result::kRequest) {
    Item item;
    item.name = Upper(r[0]);
    if (IsWriteCommand(item.name)) {
      item.reply = MakeWriteOp(item.name, &r, &item.op);
      item.kind = item.reply.empty() ? Item::kWrite : Item::kReply;
    } else if (IsReadCommand(item.name)) {
      item.kind = Item::kRead;
    } else {
      item.kind = Item::kLocal;
    }
    item.request = std::move(r);
    items.push_back(std::move(item));
  }
  backend_->stats()->requests.fetch_add(items.size(), std::memory_order_relaxed);
  bool keep = true;
  // Served up to a QUIT; a QUIT ends the connection like a protocol error.
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].kind == Item::kLocal && items[i].name == "QUIT") {
      items.resize(i + 1);
      keep = false;
      break;
    }
  }
  Serve(&items, out);
  if (!keep) return false;
  if (res == RespParser::Result::kError) {
    backend_->stats()->protocol_errors.fetch_add(1, std::memory_order_relaxed);
    Error(out, "ERR " + parser_.error());
    return false;
  }
  return true;
}

void KvSession::Serve(std::vector<Item>* items, std::string* out) {
  size_t i = 0;
  while (i < items->size()) {
    const Item::Kind kind = (*items)[i].kind;
    size_t j = i + 1;
    if (kind == Item::kWrite || kind == Item::kRead) {
      while (j < items->size() && (*items)[j].kind == kind) ++j;
      if (kind == Item::kWrite) {
        ServeWrites(items, i, j, out);
      } else {
        ServeReads(items, i, j, out);
      }
    } else if (kind == Item::kReply) {
      Error(out, (*items)[i].reply);
    } else {
      ServeLocal((*items)[i].request, (*items)[i].name, out);
    }
    i = j;
  }
}

void KvSession::ServeWrites(std::vector<Item>* items, size_t begin, size_t end,
                            std::string* out) {
  size_t i = begin;
  while (i < end) {
    // One value: as many of the writes as fit (at least one).
    std::vector<WriteOp> ops;
    size_t bytes = 0;
    while (i < end && ops.size() < options_.max_ops_per_value) {
      const size_t size = EncodedSize((*items)[i].op);
      if (!ops.empty() && bytes + size > options_.max_value_bytes) break;
      bytes += size;
      ops.push_back(std::move((*items)[i].op));
      ++i;
    }
    std::string value;
    EncodeOps(ops, &value);
    std::string replies;
    Status s = backend_->Write(value, &replies);
    if (s.ok() && replies.empty()) {
      // Chosen, but this node got its effect through a checkpoint instead
      // of executing it (StateMachine: ExecuteContext::result): no reply.
      for (size_t k = 0; k < ops.size(); ++k) {
        Error(out, "ERR the write was chosen but its reply is unknown (applied by a checkpoint)");
      }
    } else if (s.ok()) {
      backend_->stats()->write_ops_acked.fetch_add(ops.size(), std::memory_order_relaxed);
      out->append(replies);
    } else {
      const std::string msg = FailureReply(s);
      for (size_t k = 0; k < ops.size(); ++k) Error(out, msg);
    }
  }
}

void KvSession::ServeReads(std::vector<Item>* items, size_t begin, size_t end, std::string* out) {
  Status s = backend_->ReadBarrier();
  for (size_t i = begin; i < end; ++i) {
    if (!s.ok()) {
      Error(out, FailureReply(s));
      continue;
    }
    ServeRead((*items)[i].request, (*items)[i].name, out);
  }
}

void KvSession::ServeRead(const RespRequest& r, const std::string& name, std::string* out) {
  std::string value;
  if (name == "GET") {
    if (r.size() != 2) return Error(out, WrongArgs(name));
    Status s = backend_->Get(r[1], &value);
    if (s.ok()) return AppendBulk(out, value);
    if (s.IsNotFound()) return AppendNullBulk(out);
    return Error(out, "ERR " + s.ToString());
  }
  if (name == "MGET" || name == "EXISTS") {
    if (r.size() < 2) return Error(out, WrongArgs(name));
    std::string reply;
    int64_t found = 0;
    if (name == "MGET") AppendArrayHeader(&reply, r.size() - 1);
    for (size_t i = 1; i < r.size(); ++i) {
      Status s = backend_->Get(r[i], &value);
      if (!s.ok() && !s.IsNotFound()) return Error(out, "ERR " + s.ToString());
      if (s.ok()) ++found;
      if (name != "MGET") continue;
      if (s.ok()) {
        AppendBulk(&reply, value);
      } else {
        AppendNullBulk(&reply);
      }
      if (reply.size() > options_.max_reply_bytes) return Error(out, "ERR reply too large");
    }
    if (name == "MGET") {
      out->append(reply);
    } else {
      AppendInteger(out, found);
    }
    return;
  }
  if (name == "DBSIZE" || name == "DEBUG") {
    if (name == "DBSIZE" ? r.size() != 1 : (r.size() != 2 || Upper(r[1]) != "DIGEST")) {
      return Error(out, name == "DBSIZE" ? WrongArgs(name) : "ERR only DEBUG DIGEST is supported");
    }
    uint64_t keys = 0;
    uint32_t digest = 0;
    Status s = backend_->Count(&keys, &digest);
    if (!s.ok()) return Error(out, "ERR " + s.ToString());
    if (name == "DBSIZE") return AppendInteger(out, static_cast<int64_t>(keys));
    char hex[9];
    std::snprintf(hex, sizeof(hex), "%08x", digest);
    return AppendBulk(out, std::to_string(keys) + ":" + hex);
  }
  Error(out, UnknownCommand(r));
}

bool KvSession::ServeLocal(const RespRequest& r, const std::string& name, std::string* out) {
  const std::string sub = r.size() > 1 ? Upper(r[1]) : "";
  if (name == "PING") {
    if (r.size() > 2) return Error(out, WrongArgs(name)), true;
    r.size() == 2 ? AppendBulk(out, r[1]) : AppendSimple(out, "PONG");
  } else if (name == "ECHO") {
    if (r.size() != 2) return Error(out, WrongArgs(name)), true;
    AppendBulk(out, r[1]);
  } else if (name == "QUIT") {
    AppendSimple(out, "OK");
    return false;
  } else if (name == "INFO") {
    AppendBulk(out, backend_->Info());
  } else if (name == "SELECT") {
    if (r.size() != 2) return Error(out, WrongArgs(name)), true;
    r[1] == "0" ? AppendSimple(out, "OK") : Error(out, "ERR DB index is out of range");
  } else if (name == "COMMAND") {
    // redis-cli asks for COMMAND DOCS at start (for its hints); no docs is
    // an answer it copes with.
    sub == "COUNT" ? AppendInteger(out, 0) : AppendArrayHeader(out, 0);
  } else if (name == "CONFIG") {
    // redis-benchmark reads "save" and "appendonly" at start.
    if (sub != "GET" || r.size() != 3) {
      return Error(out, "ERR only CONFIG GET <parameter> is supported"), true;
    }
    const std::string p = Lower(r[2]);
    if (p == "save" || p == "appendonly") {
      AppendArrayHeader(out, 2);
      AppendBulk(out, p);
      AppendBulk(out, p == "save" ? "" : "no");
    } else {
      AppendArrayHeader(out, 0);
    }
  } else if (name == "CLIENT") {
    if (sub == "SETNAME" && r.size() == 3) {
      name_ = r[2];
      AppendSimple(out, "OK");
    } else if (sub == "GETNAME") {
      name_.empty() ? AppendNullBulk(out) : AppendBulk(out, name_);
    } else if (sub == "ID") {
      AppendInteger(out, static_cast<int64_t>(client_id_));
    } else if (sub == "INFO" || sub == "LIST") {
      AppendBulk(out, "id=" + std::to_string(client_id_) + " name=" + name_ + "\n");
    } else if (sub == "SETINFO" || sub == "REPLY" || sub == "NO-EVICT" || sub == "NO-TOUCH") {
      AppendSimple(out, "OK");
    } else {
      Error(out, "ERR unknown subcommand '" + sub.substr(0, 64) + "' of CLIENT");
    }
  } else if (name == "HELLO") {
    Error(out, "NOPROTO this server speaks RESP2 only");
  } else if (name.compare(0, 7, "CHORUS.") == 0) {
    ServeMembership(r, name, out);
  } else {
    Error(out, UnknownCommand(r));
  }
  return true;
}

void KvSession::ServeMembership(const RespRequest& r, const std::string& name, std::string* out) {
  if (name == "CHORUS.TRANSFER") {
    if (r.size() != 2) return Error(out, WrongArgs(name));
    uint64_t id = 0;
    if (!ParseNodeId(r[1], &id)) {
      return Error(out, "ERR CHORUS.TRANSFER: node id must be a positive integer");
    }
    const Status s = backend_->TransferMaster(id);
    if (!s.ok()) return Error(out, FailureReply(s));
    return AppendSimple(out, "OK");
  }
  static const struct {
    const char* command;
    const char* verb;
    size_t args;
  } kCommands[] = {{"CHORUS.MEMBERS", "members", 0},        {"CHORUS.ADDMEMBER", "add", 1},
                   {"CHORUS.ADDFOLLOWER", "follower", 1},   {"CHORUS.PROMOTE", "promote", 1},
                   {"CHORUS.REMOVEMEMBER", "remove", 1},    {"CHORUS.CHANGEMEMBER", "change", 2}};
  for (const auto& c : kCommands) {
    if (name != c.command) continue;
    if (r.size() != c.args + 1) return Error(out, WrongArgs(name));
    std::vector<std::string> args;
    for (size_t i = 1; i < r.size(); ++i) args.push_back(r[i]);
    std::vector<std::string> lines;
    const Status s = backend_->Membership(c.verb, args, &lines);
    if (!s.ok()) return Error(out, FailureReply(s));
    if (lines.empty()) return AppendSimple(out, "OK");
    AppendArrayHeader(out, lines.size());
    for (const std::string& l : lines) AppendBulk(out, l);
    return;
  }
  Error(out, UnknownCommand(r));
}

}  // namespace kv
}  // namespace chorus
