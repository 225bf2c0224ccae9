#include "history.h"

#include <cerrno>
#include <cstdlib>

namespace chorus {
namespace nemesis {
namespace {

// A line is "name=value" fields separated by one space, in the order
// kFields gives; strings are escaped so that they hold no space, '=', '%'
// or byte outside printable ASCII ("%XX", two upper-case hex digits).
const char* const kFields[] = {"id",     "client",  "kind",     "key",    "value",    "expected",
                               "outcome", "output", "swapped", "invoke", "complete", "node"};
constexpr size_t kFieldCount = sizeof(kFields) / sizeof(kFields[0]);

bool NeedsEscape(unsigned char c) { return c <= ' ' || c >= 0x7f || c == '%' || c == '='; }

void AppendEscaped(const std::string& s, std::string* out) {
  static const char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (NeedsEscape(c)) {
      out->push_back('%');
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool Unescape(const std::string& s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out->push_back(s[i]);
      continue;
    }
    const int hi = i + 1 < s.size() ? HexDigit(s[i + 1]) : -1;
    const int lo = i + 2 < s.size() ? HexDigit(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return true;
}

bool ParseInt(const std::string& s, bool allow_negative, int64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool sign = i == 0 && s[i] == '-' && allow_negative && s.size() > 1;
    if (!sign && (s[i] < '0' || s[i] > '9')) return false;
  }
  errno = 0;
  char* end = nullptr;
  const long long n = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *v = n;
  return true;
}

bool ParseUint64(const std::string& s, uint64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  errno = 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *v = n;
  return true;
}

bool ParseKind(const std::string& s, OpKind* kind) {
  for (OpKind k : {OpKind::kRead, OpKind::kWrite, OpKind::kCas}) {
    if (s == OpKindName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

bool ParseOutcome(const std::string& s, Outcome* outcome) {
  for (Outcome o : {Outcome::kOk, Outcome::kFailed, Outcome::kUnknown}) {
    if (s == OutcomeName(o)) {
      *outcome = o;
      return true;
    }
  }
  return false;
}

}  // namespace

const char* OpKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kRead: return "read";
    case OpKind::kWrite: return "write";
    case OpKind::kCas: return "cas";
  }
  return "?";
}

const char* OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kOk: return "ok";
    case Outcome::kFailed: return "failed";
    case Outcome::kUnknown: return "unknown";
  }
  return "?";
}

std::string EncodeOperation(const Operation& op) {
  std::string line;
  auto field = [&line](const char* name) {
    if (!line.empty()) line.push_back(' ');
    line += name;
    line.push_back('=');
  };
  field("id");
  line += std::to_string(op.id);
  field("client");
  line += std::to_string(op.client);
  field("kind");
  line += OpKindName(op.kind);
  field("key");
  AppendEscaped(op.key, &line);
  field("value");
  AppendEscaped(op.value, &line);
  field("expected");
  AppendEscaped(op.expected, &line);
  field("outcome");
  line += OutcomeName(op.outcome);
  field("output");
  AppendEscaped(op.output, &line);
  field("swapped");
  line += op.cas_swapped ? "1" : "0";
  field("invoke");
  line += std::to_string(op.invoke_ns);
  field("complete");
  line += std::to_string(op.complete_ns);
  field("node");
  line += std::to_string(op.node);
  return line;
}

Status DecodeOperation(const std::string& line, Operation* op) {
  std::string values[kFieldCount];
  size_t pos = 0;
  for (size_t f = 0; f < kFieldCount; ++f) {
    const std::string name = kFields[f];
    if (line.compare(pos, name.size() + 1, name + "=") != 0) {
      return Status::InvalidArgument("operation: field " + std::to_string(f + 1) +
                                     " must be '" + name + "=...'");
    }
    pos += name.size() + 1;
    const size_t end = line.find(' ', pos);
    const size_t stop = end == std::string::npos ? line.size() : end;
    values[f] = line.substr(pos, stop - pos);
    if (f + 1 < kFieldCount && end == std::string::npos) {
      return Status::InvalidArgument("operation: ends after '" + name + "', expected '" +
                                     kFields[f + 1] + "=...'");
    }
    if (f + 1 == kFieldCount && end != std::string::npos) {
      return Status::InvalidArgument("operation: text after the last field 'node'");
    }
    pos = stop + 1;
  }
  Operation o;
  int64_t n = 0;
  if (!ParseUint64(values[0], &o.id)) {
    return Status::InvalidArgument("operation: id '" + values[0] + "' is not an unsigned integer");
  }
  if (!ParseInt(values[1], false, &n) || n > INT32_MAX) {
    return Status::InvalidArgument("operation " + values[0] + ": client '" + values[1] +
                                   "' is not a non-negative int");
  }
  o.client = static_cast<int>(n);
  if (!ParseKind(values[2], &o.kind)) {
    return Status::InvalidArgument("operation " + values[0] + ": kind '" + values[2] +
                                   "' is not read, write or cas");
  }
  const char* const strings[] = {"key", "value", "expected"};
  std::string* const targets[] = {&o.key, &o.value, &o.expected};
  for (size_t i = 0; i < 3; ++i) {
    if (!Unescape(values[3 + i], targets[i])) {
      return Status::InvalidArgument("operation " + values[0] + ": " + strings[i] +
                                     " has a bad %XX escape");
    }
  }
  if (!ParseOutcome(values[6], &o.outcome)) {
    return Status::InvalidArgument("operation " + values[0] + ": outcome '" + values[6] +
                                   "' is not ok, failed or unknown");
  }
  if (!Unescape(values[7], &o.output)) {
    return Status::InvalidArgument("operation " + values[0] + ": output has a bad %XX escape");
  }
  if (values[8] != "0" && values[8] != "1") {
    return Status::InvalidArgument("operation " + values[0] + ": swapped '" + values[8] +
                                   "' is not 0 or 1");
  }
  o.cas_swapped = values[8] == "1";
  if (!ParseInt(values[9], true, &o.invoke_ns)) {
    return Status::InvalidArgument("operation " + values[0] + ": invoke '" + values[9] +
                                   "' is not an integer");
  }
  if (!ParseInt(values[10], true, &o.complete_ns)) {
    return Status::InvalidArgument("operation " + values[0] + ": complete '" + values[10] +
                                   "' is not an integer");
  }
  if (o.outcome != Outcome::kUnknown && o.complete_ns < o.invoke_ns) {
    return Status::InvalidArgument("operation " + values[0] + ": completes before it is invoked");
  }
  if (!ParseInt(values[11], true, &n) || n < INT32_MIN || n > INT32_MAX) {
    return Status::InvalidArgument("operation " + values[0] + ": node '" + values[11] +
                                   "' is not an int");
  }
  o.node = static_cast<int>(n);
  *op = std::move(o);
  return Status::OK();
}

std::string EncodeHistory(const std::vector<Operation>& history) {
  std::string text;
  for (const Operation& op : history) {
    text += EncodeOperation(op);
    text.push_back('\n');
  }
  return text;
}

Status DecodeHistory(const std::string& text, std::vector<Operation>* history) {
  std::vector<Operation> ops;
  size_t pos = 0;
  size_t line_number = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    Operation op;
    Status s = DecodeOperation(line, &op);
    if (!s.ok()) return s.Annotate("line " + std::to_string(line_number));
    ops.push_back(std::move(op));
  }
  *history = std::move(ops);
  return Status::OK();
}

}  // namespace nemesis
}  // namespace chorus
