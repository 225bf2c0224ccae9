#include "sample/kv/resp.h"

#include <cstring>

namespace chorus {
namespace kv {
namespace {

// Parses a whole decimal integer ("-1", "42"): no sign but one leading '-',
// no spaces, at most 18 digits (so it never overflows). false otherwise.
bool ParseInt(const std::string& s, size_t from, int64_t* v) {
  size_t i = from;
  bool negative = false;
  if (i < s.size() && s[i] == '-') {
    negative = true;
    ++i;
  }
  if (i == s.size() || s.size() - i > 18) return false;
  int64_t n = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    n = n * 10 + (s[i] - '0');
  }
  *v = negative ? -n : n;
  return true;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsSpace(char c) { return c == ' ' || c == '\t'; }

// One protocol-safe line: CR and LF would end the reply early.
std::string OneLine(const std::string& s) {
  std::string line = s;
  for (char& c : line) {
    if (c == '\r' || c == '\n') c = ' ';
  }
  return line;
}

}  // namespace

bool SplitInline(const std::string& line, std::vector<std::string>* words) {
  words->clear();
  size_t i = 0;
  const size_t n = line.size();
  while (true) {
    while (i < n && IsSpace(line[i])) ++i;
    if (i == n) return true;
    std::string word;
    if (line[i] == '"') {
      ++i;
      while (true) {
        if (i == n) return false;  // unbalanced
        char c = line[i];
        if (c == '"') {
          ++i;
          break;
        }
        if (c == '\\' && i + 1 < n) {
          char e = line[i + 1];
          if (e == 'x' && i + 3 < n && HexDigit(line[i + 2]) >= 0 && HexDigit(line[i + 3]) >= 0) {
            word.push_back(static_cast<char>(HexDigit(line[i + 2]) * 16 + HexDigit(line[i + 3])));
            i += 4;
            continue;
          }
          word.push_back(e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e);
          i += 2;
          continue;
        }
        word.push_back(c);
        ++i;
      }
      if (i < n && !IsSpace(line[i])) return false;  // "a"b
    } else if (line[i] == '\'') {
      ++i;
      while (true) {
        if (i == n) return false;
        if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
          word.push_back('\'');
          i += 2;
          continue;
        }
        if (line[i] == '\'') {
          ++i;
          break;
        }
        word.push_back(line[i++]);
      }
      if (i < n && !IsSpace(line[i])) return false;
    } else {
      while (i < n && !IsSpace(line[i])) word.push_back(line[i++]);
    }
    words->push_back(std::move(word));
  }
}

RespParser::Result RespParser::Fail(const std::string& why) {
  error_ = "Protocol error: " + why;
  return Result::kError;
}

bool RespParser::TakeLine(std::string* line) {
  // scanned_ bytes after pos_ are known to hold no '\n' (a line trickling in
  // is scanned once, not once per read).
  const size_t limit = limits_.max_inline_bytes + 2;  // the line, "\r\n"
  const size_t avail = buf_.size() - pos_;
  const size_t end = avail < limit ? avail : limit;
  const char* start = buf_.data() + pos_;
  const void* nl = end > scanned_ ? std::memchr(start + scanned_, '\n', end - scanned_) : nullptr;
  if (nl == nullptr) {
    scanned_ = end;
    if (avail >= limit) Fail(buf_[pos_] == '*' || buf_[pos_] == '$' ? "too big header line"
                                                                    : "too big inline request");
    return false;
  }
  size_t len = static_cast<const char*>(nl) - start;
  const size_t next = pos_ + len + 1;
  if (len > 0 && start[len - 1] == '\r') --len;
  line->assign(start, len);
  pos_ = next;
  scanned_ = 0;
  return true;
}

RespParser::Result RespParser::Line(std::string* line) {
  if (TakeLine(line)) return Result::kRequest;
  return error_.empty() ? NeedMore() : Result::kError;
}

RespParser::Result RespParser::NeedMore() {
  Compact();
  return Result::kNeedMore;
}

RespParser::Result RespParser::ParseInline(RespRequest* request) {
  std::string line;
  const Result r = Line(&line);
  if (r != Result::kRequest) return r;
  if (!SplitInline(line, request)) return Fail("unbalanced quotes in request");
  return Result::kRequest;
}

void RespParser::Compact() {
  // Drop consumed bytes once they are the larger part (amortized O(1) per byte).
  if (pos_ > 0 && (pos_ == buf_.size() || pos_ >= buf_.size() / 2)) {
    buf_.erase(0, pos_);
    pos_ = 0;
  }
}

RespParser::Result RespParser::Next(RespRequest* request) {
  request->clear();
  while (true) {
    if (!error_.empty()) return Result::kError;
    switch (state_) {
      case State::kStart: {
        if (pos_ == buf_.size()) return NeedMore();
        if (buf_[pos_] != '*') {
          Result r = ParseInline(request);
          if (r == Result::kRequest && request->empty()) continue;  // empty line
          return r;
        }
        std::string line;
        const Result r = Line(&line);
        if (r != Result::kRequest) return r;
        int64_t n = 0;
        if (!ParseInt(line, 1, &n) || n > static_cast<int64_t>(limits_.max_args)) {
          return Fail("invalid multibulk length");
        }
        if (n <= 0) continue;  // "*0" and "*-1": no request, as in Redis
        args_expected_ = static_cast<size_t>(n);
        partial_.clear();
        // Never trust the announced length for memory: grow as arguments come.
        partial_.reserve(args_expected_ < 16 ? args_expected_ : 16);
        request_bytes_ = 0;
        state_ = State::kBulkHeader;
        break;
      }
      case State::kBulkHeader: {
        if (partial_.size() == args_expected_) {
          request->swap(partial_);
          partial_.clear();
          state_ = State::kStart;
          return Result::kRequest;
        }
        if (pos_ == buf_.size()) return NeedMore();
        if (buf_[pos_] != '$') {
          const char c = buf_[pos_];
          return Fail(std::string("expected '$', got '") +
                      (c >= 0x20 && c < 0x7f ? std::string(1, c) : std::string("?")) + "'");
        }
        std::string line;
        const Result r = Line(&line);
        if (r != Result::kRequest) return r;
        int64_t len = 0;
        if (!ParseInt(line, 1, &len) || len < 0 ||
            static_cast<uint64_t>(len) > limits_.max_bulk_bytes) {
          return Fail("invalid bulk length");
        }
        if (request_bytes_ + static_cast<size_t>(len) > limits_.max_request_bytes) {
          return Fail("request too large");
        }
        bulk_len_ = static_cast<size_t>(len);
        state_ = State::kBulkBody;
        break;
      }
      case State::kBulkBody: {
        if (buf_.size() - pos_ < bulk_len_ + 2) return NeedMore();
        if (buf_[pos_ + bulk_len_] != '\r' || buf_[pos_ + bulk_len_ + 1] != '\n') {
          return Fail("bulk string not followed by CRLF");
        }
        partial_.emplace_back(buf_, pos_, bulk_len_);
        pos_ += bulk_len_ + 2;
        request_bytes_ += bulk_len_;
        state_ = State::kBulkHeader;
        break;
      }
    }
  }
}

void AppendSimple(std::string* out, const std::string& s) {
  out->push_back('+');
  out->append(OneLine(s));
  out->append("\r\n");
}

void AppendError(std::string* out, const std::string& msg) {
  out->push_back('-');
  out->append(OneLine(msg));
  out->append("\r\n");
}

void AppendInteger(std::string* out, int64_t v) {
  out->push_back(':');
  out->append(std::to_string(v));
  out->append("\r\n");
}

void AppendBulk(std::string* out, const std::string& s) {
  out->push_back('$');
  out->append(std::to_string(s.size()));
  out->append("\r\n");
  out->append(s);
  out->append("\r\n");
}

void AppendNullBulk(std::string* out) { out->append("$-1\r\n"); }

void AppendArrayHeader(std::string* out, size_t n) {
  out->push_back('*');
  out->append(std::to_string(n));
  out->append("\r\n");
}

}  // namespace kv
}  // namespace chorus
