#include "sample/kv/resp.h"

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sample/kv/kv_ops.h"

namespace chorus {
namespace kv {
namespace {

using R = RespParser::Result;

std::vector<RespRequest> ParseAll(RespParser* p, R* last) {
  std::vector<RespRequest> out;
  RespRequest r;
  while ((*last = p->Next(&r)) == R::kRequest) out.push_back(r);
  return out;
}

TEST(RespParser, ArrayOfBulkStrings) {
  RespParser p;
  const std::string in = "*3\r\n$3\r\nSET\r\n$1\r\na\r\n$5\r\nhe\r\no\r\n";
  p.Feed(in.data(), in.size());
  R last;
  auto reqs = ParseAll(&p, &last);
  EXPECT_EQ(last, R::kNeedMore);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0], (RespRequest{"SET", "a", "he\r\no"}));  // binary-safe
  EXPECT_EQ(p.buffered(), 0u);
}

TEST(RespParser, PipelinedRequestsInOneFeed) {
  RespParser p;
  std::string in;
  for (int i = 0; i < 16; ++i) in += "*2\r\n$3\r\nGET\r\n$2\r\nk" + std::to_string(i % 10) + "\r\n";
  in += "PING\r\n";
  p.Feed(in.data(), in.size());
  R last;
  auto reqs = ParseAll(&p, &last);
  ASSERT_EQ(reqs.size(), 17u);
  EXPECT_EQ(reqs[3], (RespRequest{"GET", "k3"}));
  EXPECT_EQ(reqs[16], (RespRequest{"PING"}));
}

TEST(RespParser, ByteByByteGivesTheSameRequests) {
  const std::string in =
      "*2\r\n$4\r\nECHO\r\n$11\r\nhello world\r\nset  \"a b\" 'c d'\n*1\r\n$4\r\nPING\r\n";
  RespParser p;
  std::vector<RespRequest> reqs;
  for (char c : in) {
    p.Feed(&c, 1);
    R last;
    for (auto& r : ParseAll(&p, &last)) reqs.push_back(r);
    ASSERT_EQ(last, R::kNeedMore);
  }
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0], (RespRequest{"ECHO", "hello world"}));
  EXPECT_EQ(reqs[1], (RespRequest{"set", "a b", "c d"}));
  EXPECT_EQ(reqs[2], (RespRequest{"PING"}));
}

TEST(RespParser, InlineQuotesAndEscapes) {
  std::vector<std::string> w;
  ASSERT_TRUE(SplitInline("SET k \"x\\ty\\x41\\\"\"", &w));
  EXPECT_EQ(w, (std::vector<std::string>{"SET", "k", "x\tyA\""}));
  EXPECT_FALSE(SplitInline("SET \"unbalanced", &w));
  EXPECT_FALSE(SplitInline("SET 'a'b", &w));
  ASSERT_TRUE(SplitInline("   ", &w));
  EXPECT_TRUE(w.empty());
}

TEST(RespParser, EmptyLinesAndEmptyArraysAreSkipped) {
  RespParser p;
  const std::string in = "\r\n\n*0\r\n*-1\r\nPING\r\n";
  p.Feed(in.data(), in.size());
  R last;
  auto reqs = ParseAll(&p, &last);
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0], (RespRequest{"PING"}));
}

struct BadCase {
  const char* input;
  const char* error;
};

TEST(RespParser, MalformedInputIsAProtocolError) {
  const BadCase cases[] = {
      {"*x\r\n", "invalid multibulk length"},
      {"*2\r\n:1\r\n", "expected '$', got ':'"},
      {"*1\r\n$-1\r\n", "invalid bulk length"},
      {"*1\r\n$abc\r\n", "invalid bulk length"},
      {"*1\r\n$3\r\nabcd\r\n", "bulk string not followed by CRLF"},
      {"*1\r\n$99999999999999999999999\r\n", "invalid bulk length"},
      {"SET \"a\r\n", "unbalanced quotes"},
  };
  for (const BadCase& c : cases) {
    RespParser p;
    p.Feed(c.input, std::strlen(c.input));
    R last;
    ParseAll(&p, &last);
    EXPECT_EQ(last, R::kError) << c.input;
    EXPECT_NE(p.error().find(c.error), std::string::npos) << c.input << " -> " << p.error();
    RespRequest r;
    EXPECT_EQ(p.Next(&r), R::kError);  // sticky
  }
}

TEST(RespParser, LimitsAreProtocolErrors) {
  RespLimits limits;
  limits.max_bulk_bytes = 10;
  limits.max_args = 3;
  limits.max_request_bytes = 15;
  limits.max_inline_bytes = 20;
  auto error_of = [&](const std::string& in) {
    RespParser p(limits);
    p.Feed(in.data(), in.size());
    R last;
    ParseAll(&p, &last);
    return last == R::kError ? p.error() : std::string("no error");
  };
  EXPECT_NE(error_of("*1\r\n$11\r\n").find("invalid bulk length"), std::string::npos);
  EXPECT_EQ(error_of("*1\r\n$10\r\n0123456789\r\n"), "no error");
  EXPECT_NE(error_of("*4\r\n").find("invalid multibulk length"), std::string::npos);
  EXPECT_NE(error_of("*2\r\n$10\r\n0123456789\r\n$6\r\n").find("request too large"),
            std::string::npos);
  // A line without its end is refused once it is too long, not buffered forever.
  EXPECT_NE(error_of(std::string(30, 'a')).find("too big inline request"), std::string::npos);
  EXPECT_NE(error_of("*" + std::string(30, '1')).find("too big header line"), std::string::npos);
  EXPECT_EQ(error_of(std::string(19, 'a')), "no error");
}

TEST(RespParser, RandomBytesNeverCrashOrGrowWithoutBound) {
  std::mt19937 rng(12345);
  const char alphabet[] = "*$\r\n0123456789-abc \"'\\x";
  for (int round = 0; round < 2000; ++round) {
    RespParser p;
    std::string in;
    const int len = static_cast<int>(rng() % 200);
    for (int i = 0; i < len; ++i) in.push_back(alphabet[rng() % (sizeof(alphabet) - 1)]);
    p.Feed(in.data(), in.size());
    R last;
    ParseAll(&p, &last);
    EXPECT_TRUE(last == R::kNeedMore || last == R::kError);
    EXPECT_LE(p.buffered(), in.size());
  }
}

TEST(RespEncoder, Replies) {
  std::string out;
  AppendSimple(&out, "OK");
  AppendError(&out, "ERR bad\r\nthing");
  AppendInteger(&out, -42);
  AppendBulk(&out, "a\r\nb");
  AppendNullBulk(&out);
  AppendArrayHeader(&out, 2);
  EXPECT_EQ(out, "+OK\r\n-ERR bad  thing\r\n:-42\r\n$4\r\na\r\nb\r\n$-1\r\n*2\r\n");
}

TEST(KvOps, EncodeDecodeRoundTrip) {
  std::vector<WriteOp> ops;
  for (const RespRequest& req : {RespRequest{"set", "k", "v", "nx"},
                                 RespRequest{"DEL", "a", "b"}, RespRequest{"INCRBY", "n", "-7"},
                                 RespRequest{"MSET", "a", "1", "b", "2"},
                                 RespRequest{"chorus.cas", "k", "", "new"}}) {
    RespRequest r = req;
    WriteOp op;
    ASSERT_EQ(MakeWriteOp(Upper(r[0]), &r, &op), "");
    ops.push_back(op);
  }
  std::string value;
  EncodeOps(ops, &value);
  std::vector<WriteOp> back;
  ASSERT_TRUE(DecodeOps(value, &back));
  ASSERT_EQ(back.size(), 5u);
  EXPECT_EQ(back[0].flags, kNx);
  EXPECT_EQ(back[2].delta, -7);
  EXPECT_EQ(back[3].args, (std::vector<std::string>{"a", "1", "b", "2"}));
  EXPECT_EQ(back[4].code, OpCode::kCas);
  EXPECT_EQ(back[4].args, (std::vector<std::string>{"k", "", "new"}));
  // Every truncation and a flipped byte in a header is refused, never a crash.
  for (size_t n = 0; n < value.size(); ++n) EXPECT_FALSE(DecodeOps(value.substr(0, n), &back));
  std::string bad = value;
  bad[1] = '\x7f';  // op count
  EXPECT_FALSE(DecodeOps(bad, &back));
}

TEST(KvOps, ArgumentErrors) {
  auto err = [](RespRequest r) {
    WriteOp op;
    return MakeWriteOp(Upper(r[0]), &r, &op);
  };
  EXPECT_EQ(err({"SET", "k"}), "ERR wrong number of arguments for 'set' command");
  EXPECT_EQ(err({"SET", "k", "v", "NX", "XX"}), "ERR syntax error");
  EXPECT_EQ(err({"SET", "k", "v", "EX", "10"}), "ERR syntax error");
  EXPECT_EQ(err({"MSET", "a", "1", "b"}), "ERR wrong number of arguments for 'mset' command");
  EXPECT_EQ(err({"INCRBY", "n", "x"}), "ERR value is not an integer or out of range");
  EXPECT_EQ(err({"INCR"}), "ERR wrong number of arguments for 'incr' command");
  EXPECT_EQ(err({"DECRBY", "n", "-9223372036854775808"}), "ERR decrement would overflow");
  EXPECT_EQ(err({"CHORUS.CAS", "k", "a"}),
            "ERR wrong number of arguments for 'chorus.cas' command");
  EXPECT_EQ(err({"CHORUS.CAS", "k", "a", "b", "c"}),
            "ERR wrong number of arguments for 'chorus.cas' command");
  EXPECT_EQ(err({"CHORUS.CAS", "k", "a", ""}), "ERR CHORUS.CAS: the new value must not be empty");
}

TEST(KvOps, CasWithWrongArityDoesNotDecode) {
  for (size_t argc : {2u, 4u}) {
    WriteOp op;
    op.code = OpCode::kCas;
    op.args.assign(argc, "x");
    std::string value;
    EncodeOps({op}, &value);
    std::vector<WriteOp> back;
    EXPECT_FALSE(DecodeOps(value, &back)) << argc;
  }
}

}  // namespace
}  // namespace kv
}  // namespace chorus
