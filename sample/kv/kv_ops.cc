#include "sample/kv/kv_ops.h"

#include <cerrno>
#include <cstdlib>

#include "utils/coding.h"

namespace chorus {
namespace kv {
namespace {

// Value layout (all integers little-endian, fixed width):
//   u8 version (1), u32 op count, then per op:
//   u8 code, u8 flags, i64 delta, u32 arg count, per arg: u32 length, bytes.
constexpr uint8_t kVersion = 1;

// A whole decimal int64 as Redis accepts it ("12", "-3"; no spaces, no '+').
bool ParseInt64(const std::string& s, int64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!((s[i] >= '0' && s[i] <= '9') || (i == 0 && s[i] == '-' && s.size() > 1))) return false;
  }
  errno = 0;
  char* end = nullptr;
  long long n = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *v = n;
  return true;
}

class Reader {
 public:
  explicit Reader(const std::string& s) : p_(s.data()), end_(s.data() + s.size()) {}
  bool U8(uint8_t* v) {
    if (end_ - p_ < 1) return false;
    *v = static_cast<uint8_t>(*p_++);
    return true;
  }
  bool U32(uint32_t* v) {
    if (end_ - p_ < 4) return false;
    *v = DecodeFixed32(p_);
    p_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (end_ - p_ < 8) return false;
    *v = DecodeFixed64(p_);
    p_ += 8;
    return true;
  }
  bool Bytes(uint32_t n, std::string* s) {
    if (static_cast<uint64_t>(end_ - p_) < n) return false;
    s->assign(p_, n);
    p_ += n;
    return true;
  }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace

std::string Upper(const std::string& name) {
  std::string upper = name;
  for (char& c : upper) c = static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  return upper;
}

bool IsWriteCommand(const std::string& n) {
  return n == "SET" || n == "DEL" || n == "INCR" || n == "INCRBY" || n == "DECR" ||
         n == "DECRBY" || n == "MSET" || n == "CHORUS.CAS";
}

std::string MakeWriteOp(const std::string& n, RespRequest* request, WriteOp* op) {
  RespRequest& r = *request;
  const size_t argc = r.size();
  op->flags = 0;
  op->delta = 0;
  op->args.clear();
  if (n == "SET") {
    if (argc < 3) return WrongArgs(n);
    op->code = OpCode::kSet;
    for (size_t i = 3; i < argc; ++i) {
      const std::string opt = Upper(r[i]);
      if (opt == "NX" && (op->flags & kXx) == 0) {
        op->flags |= kNx;
      } else if (opt == "XX" && (op->flags & kNx) == 0) {
        op->flags |= kXx;
      } else {
        return "ERR syntax error";  // EX, PX, GET, KEEPTTL...: not supported
      }
    }
    op->args.push_back(std::move(r[1]));
    op->args.push_back(std::move(r[2]));
    return "";
  }
  if (n == "CHORUS.CAS") {
    if (argc != 4) return WrongArgs(n);
    // "" stands for "absent" on the expected side; as a new value it could
    // not be told from an absent key.
    if (r[3].empty()) return "ERR CHORUS.CAS: the new value must not be empty";
    op->code = OpCode::kCas;
  } else if (n == "DEL") {
    if (argc < 2) return WrongArgs(n);
    op->code = OpCode::kDel;
  } else if (n == "MSET") {
    if (argc < 3 || argc % 2 != 1) return WrongArgs(n);
    op->code = OpCode::kMSet;
  } else if (n == "INCR" || n == "DECR") {
    if (argc != 2) return WrongArgs(n);
    op->code = OpCode::kIncrBy;
    op->delta = n == "INCR" ? 1 : -1;
  } else if (n == "INCRBY" || n == "DECRBY") {
    if (argc != 3) return WrongArgs(n);
    int64_t d = 0;
    if (!ParseInt64(r[2], &d)) return "ERR value is not an integer or out of range";
    if (n == "DECRBY") {
      if (d == INT64_MIN) return "ERR decrement would overflow";
      d = -d;
    }
    op->code = OpCode::kIncrBy;
    op->delta = d;
    op->args.push_back(std::move(r[1]));
    return "";
  } else {
    return "ERR unknown write command '" + n + "'";
  }
  for (size_t i = 1; i < argc; ++i) op->args.push_back(std::move(r[i]));
  return "";
}

size_t EncodedSize(const WriteOp& op) {
  size_t n = 1 + 1 + 8 + 4;
  for (const std::string& a : op.args) n += 4 + a.size();
  return n;
}

void EncodeOps(const std::vector<WriteOp>& ops, std::string* value) {
  size_t total = 5;
  for (const WriteOp& op : ops) total += EncodedSize(op);
  value->reserve(total);
  value->push_back(static_cast<char>(kVersion));
  PutFixed32(value, static_cast<uint32_t>(ops.size()));
  for (const WriteOp& op : ops) {
    value->push_back(static_cast<char>(op.code));
    value->push_back(static_cast<char>(op.flags));
    PutFixed64(value, static_cast<uint64_t>(op.delta));
    PutFixed32(value, static_cast<uint32_t>(op.args.size()));
    for (const std::string& a : op.args) {
      PutFixed32(value, static_cast<uint32_t>(a.size()));
      value->append(a);
    }
  }
}

bool DecodeOps(const std::string& value, std::vector<WriteOp>* ops) {
  ops->clear();
  Reader in(value);
  uint8_t version = 0;
  uint32_t count = 0;
  if (!in.U8(&version) || version != kVersion || !in.U32(&count)) return false;
  // Every op takes at least 14 bytes: a count beyond that is damage, and
  // must not make us reserve memory for it.
  if (count > in.left() / 14) return false;
  ops->resize(count);
  for (WriteOp& op : *ops) {
    uint8_t code = 0;
    uint64_t delta = 0;
    uint32_t argc = 0;
    if (!in.U8(&code) || !in.U8(&op.flags) || !in.U64(&delta) || !in.U32(&argc)) return false;
    if (code < 1 || code > 5 || argc > in.left() / 4) return false;
    op.code = static_cast<OpCode>(code);
    op.delta = static_cast<int64_t>(delta);
    op.args.resize(argc);
    for (std::string& a : op.args) {
      uint32_t len = 0;
      if (!in.U32(&len) || !in.Bytes(len, &a)) return false;
    }
    // The arity MakeWriteOp guarantees; a value that breaks it is damage.
    const bool arity_ok = (op.code == OpCode::kSet && argc == 2) ||
                          (op.code == OpCode::kDel && argc >= 1) ||
                          (op.code == OpCode::kIncrBy && argc == 1) ||
                          (op.code == OpCode::kMSet && argc >= 2 && argc % 2 == 0) ||
                          (op.code == OpCode::kCas && argc == 3);
    if (!arity_ok) return false;
  }
  return in.left() == 0;
}

std::string Lower(const std::string& s) {
  std::string lower = s;
  for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return lower;
}

std::string WrongArgs(const std::string& name) {
  return "ERR wrong number of arguments for '" + Lower(name) + "' command";
}

}  // namespace kv
}  // namespace chorus
