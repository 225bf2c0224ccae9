// libFuzzer target: bytes from a client into the RESP2 parser, fed in
// pieces whose sizes the input chooses, and into the write-op decoder.
// Checks: no crash or sanitizer report; the requests do not depend on how
// the bytes were split into reads; the parser's buffer stays bounded; a
// value that decodes re-encodes to the same bytes.
//
// Built with -DCHORUS_FUZZ=ON (a clang build dir, see scripts/fuzz.sh):
//   cmake --build build-fuzz --target resp_fuzz && build-fuzz/sample/kv/resp_fuzz -max_total_time=20
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sample/kv/kv_ops.h"
#include "sample/kv/resp.h"

namespace {

using chorus::kv::RespParser;
using chorus::kv::RespRequest;

void Require(bool ok) {
  if (!ok) std::abort();
}

// Parses `in` split at the given cut sizes; returns the requests and the
// final result.
std::vector<RespRequest> Parse(const std::string& in, const std::vector<size_t>& cuts,
                               const chorus::kv::RespLimits& limits, RespParser::Result* last) {
  RespParser p(limits);
  std::vector<RespRequest> out;
  size_t pos = 0, c = 0;
  *last = RespParser::Result::kNeedMore;
  while (pos < in.size()) {
    size_t n = cuts.empty() ? in.size() : cuts[c++ % cuts.size()];
    if (n == 0 || n > in.size() - pos) n = in.size() - pos;
    p.Feed(in.data() + pos, n);
    pos += n;
    RespRequest r;
    while ((*last = p.Next(&r)) == RespParser::Result::kRequest) out.push_back(r);
    // Never more than one line / bulk (plus what one read brought) held.
    Require(p.buffered() <= limits.max_request_bytes + limits.max_inline_bytes + n + 64);
    if (*last == RespParser::Result::kError) break;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // First byte: how many cut sizes follow (0..7), each one byte.
  const size_t ncuts = data[0] % 8;
  if (size < 1 + ncuts) return 0;
  std::vector<size_t> cuts;
  for (size_t i = 0; i < ncuts; ++i) cuts.push_back(data[1 + i] % 64 + 1);
  const std::string in(reinterpret_cast<const char*>(data) + 1 + ncuts, size - 1 - ncuts);

  chorus::kv::RespLimits limits;  // small limits, so the fuzzer reaches them
  limits.max_bulk_bytes = 64;
  limits.max_args = 8;
  limits.max_request_bytes = 256;
  limits.max_inline_bytes = 128;
  RespParser::Result whole_last, cut_last;
  const std::vector<RespRequest> whole = Parse(in, {}, limits, &whole_last);
  const std::vector<RespRequest> cut = Parse(in, cuts, limits, &cut_last);
  Require(whole == cut);
  Require(whole_last == cut_last);

  std::vector<chorus::kv::WriteOp> ops;
  if (chorus::kv::DecodeOps(in, &ops)) {
    std::string again;
    chorus::kv::EncodeOps(ops, &again);
    Require(again == in);
  }
  return 0;
}
