// RESP2, the Redis serialization protocol (version 2), as far as a server
// needs it: a request parser and a reply encoder.
//
// Requests are either arrays of bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\na\r\n",
// what every client library and redis-benchmark send) or inline commands
// (one line of words, "GET a\r\n", what a person types into nc or telnet).
// Several requests may arrive in one read (pipelining) and one request may
// arrive over many reads; the parser keeps its place, so a large bulk
// string trickling in byte by byte costs linear time, never quadratic.
//
// Every size is bounded (RespLimits): a request that breaks a limit or the
// grammar is a protocol error. After one the byte stream cannot be trusted
// any more (where would the next request start?), so the server replies
// with the error and closes the connection, as Redis does.
#ifndef CHORUS_SAMPLE_KV_RESP_H_
#define CHORUS_SAMPLE_KV_RESP_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace chorus {
namespace kv {

struct RespLimits {
  // Largest bulk string (one argument: a key or a value). Default 1 MiB.
  size_t max_bulk_bytes = 1u << 20;
  // Most arguments of one request (its array length, the command included).
  // Default 65536.
  size_t max_args = 65536;
  // Largest request: its bulk strings together. Default 4 MiB.
  size_t max_request_bytes = 4u << 20;
  // Longest line: an inline command, or an array / bulk header (which is
  // at most "$" + 20 digits: a longer one is garbage). Default 64 KiB.
  size_t max_inline_bytes = 64u << 10;
};

// One request: its arguments, the command name first (as sent: the server
// compares names case-insensitively).
using RespRequest = std::vector<std::string>;

class RespParser {
 public:
  enum class Result {
    kRequest,    // *request holds the next request
    kNeedMore,   // no complete request buffered: Feed more bytes
    kError,      // protocol error (error() says which): reply, then close
  };

  explicit RespParser(const RespLimits& limits = RespLimits()) : limits_(limits) {}

  // Appends bytes read from the connection.
  void Feed(const char* data, size_t n) { buf_.append(data, n); }

  // Takes the next complete request out of the buffered bytes. Once it
  // returned kError it returns kError ever after. An empty inline line is
  // skipped (no request), as Redis does.
  Result Next(RespRequest* request);

  // The protocol error, e.g. "Protocol error: invalid bulk length"
  // (without the leading '-' and "ERR "). Empty before an error.
  const std::string& error() const { return error_; }

  // Bytes buffered and not yet consumed (bounded by the limits plus one read).
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  enum class State { kStart, kBulkHeader, kBulkBody };

  // A line ending at "\n" from pos_ (the "\r" before it, if any, is not
  // part of it): sets *line and moves pos_ past it. false: not complete yet,
  // or longer than max_inline_bytes (then error_ is set).
  bool TakeLine(std::string* line);
  // TakeLine as a Result: kRequest with *line, kNeedMore or kError.
  Result Line(std::string* line);
  Result NeedMore();  // compacts the buffer, returns kNeedMore
  Result Fail(const std::string& why);
  Result ParseInline(RespRequest* request);
  void Compact();

  const RespLimits limits_;
  std::string buf_;
  size_t pos_ = 0;           // first unconsumed byte of buf_
  size_t scanned_ = 0;       // bytes from pos_ known to hold no '\n'
  State state_ = State::kStart;
  size_t args_expected_ = 0;  // array length of the request being parsed
  size_t bulk_len_ = 0;       // length of the bulk string being read
  size_t request_bytes_ = 0;  // bulk bytes of the request so far
  RespRequest partial_;       // arguments of the request being parsed
  std::string error_;
};

// Splits an inline command line into words: spaces and tabs separate them;
// "double quoted" words may hold spaces and the escapes \n \r \t \\ \" \xHH;
// 'single quoted' ones hold everything but \' literally. false on an
// unbalanced quote (or a quote not followed by a space).
bool SplitInline(const std::string& line, std::vector<std::string>* words);

// Reply encoders: each appends one RESP2 value to *out.
void AppendSimple(std::string* out, const std::string& s);   // +s (no CR/LF in s)
void AppendError(std::string* out, const std::string& msg);  // -msg (CR/LF become spaces)
void AppendInteger(std::string* out, int64_t v);              // :v
void AppendBulk(std::string* out, const std::string& s);     // $len s
void AppendNullBulk(std::string* out);                        // $-1
void AppendArrayHeader(std::string* out, size_t n);           // *n (then n values)

}  // namespace kv
}  // namespace chorus

#endif  // CHORUS_SAMPLE_KV_RESP_H_
