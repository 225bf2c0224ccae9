#include "sample/kv/kv_session.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sample/kv/kv_store.h"

namespace chorus {
namespace kv {
namespace {

namespace fs = std::filesystem;

// A backend on a real KvStore with no cluster: each Write is executed at
// once as the next instance. Counts the proposals and barriers.
class FakeBackend : public KvBackend {
 public:
  explicit FakeBackend(KvStore* store) : store_(store) {}
  Status Write(const std::string& value, std::string* replies) override {
    values.push_back(value);
    if (!write_status.ok()) return write_status;
    ExecuteInfo info;
    info.instance = next_++;
    ExecuteContext ctx;
    store_->Execute(info, value, &ctx);
    *replies = ctx.output;
    return Status::OK();
  }
  Status ReadBarrier() override {
    ++barriers;
    return barrier_status;
  }
  Status Get(const std::string& key, std::string* value) override {
    return store_->Get(key, value);
  }
  Status Count(uint64_t* keys, uint32_t* digest) override { return store_->Count(keys, digest); }
  std::string Info() override { return "# Replication\r\nrole:master\r\n"; }
  SessionStats* stats() override { return &stats_; }
  Status Membership(const std::string& verb, const std::vector<std::string>& args,
                    std::vector<std::string>* lines) override {
    std::string call = verb;
    for (const std::string& a : args) call += " " + a;
    membership_calls.push_back(call);
    if (verb == "members") *lines = {"version 2", "voter 1@127.0.0.1:7001"};
    return membership_status;
  }

  Status TransferMaster(uint64_t node_id) override {
    transfers.push_back(node_id);
    return transfer_status;
  }

  std::vector<std::string> values;
  std::vector<std::string> membership_calls;
  std::vector<uint64_t> transfers;
  Status transfer_status;
  Status membership_status;
  int barriers = 0;
  Status write_status;
  Status barrier_status;

 private:
  KvStore* store_;
  uint64_t next_ = 0;
  SessionStats stats_;
};

class KvSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kv_session_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    KvStoreOptions o;
    o.create_if_missing = true;
    ASSERT_TRUE(KvStore::Open(root_ + "/kv", o, &store_).ok());
    backend_ = std::make_unique<FakeBackend>(store_.get());
    session_ = std::make_unique<KvSession>(backend_.get(), SessionOptions(), 7);
  }
  void TearDown() override {
    session_.reset();
    backend_.reset();
    store_.reset();
    fs::remove_all(root_);
  }
  // Sends `in` in one piece; returns the replies (and whether it stays open).
  std::string Send(const std::string& in, bool* open = nullptr) {
    std::string out;
    bool keep = session_->OnData(in.data(), in.size(), &out);
    if (open != nullptr) *open = keep;
    return out;
  }

  std::string root_;
  std::unique_ptr<KvStore> store_;
  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<KvSession> session_;
};

TEST_F(KvSessionTest, PipelinedWritesAreOneValueAndRepliesKeepTheirOrder) {
  std::string in;
  for (int i = 0; i < 16; ++i) in += "*3\r\n$3\r\nSET\r\n$2\r\nk" + std::to_string(i % 10) + "\r\n$1\r\nv\r\n";
  std::string expect;
  for (int i = 0; i < 16; ++i) expect += "+OK\r\n";
  EXPECT_EQ(Send(in), expect);
  EXPECT_EQ(backend_->values.size(), 1u);
  EXPECT_EQ(backend_->stats()->write_ops_acked.load(), 16u);
}

TEST_F(KvSessionTest, MixedPipelineRunsInOrder) {
  const std::string out = Send(
      "SET a 1\r\nINCR a\r\nGET a\r\nGET b\r\nSET b x\r\nMGET a b c\r\nEXISTS a b c\r\n"
      "DEL a\r\nGET a\r\nPING\r\n");
  EXPECT_EQ(out,
            "+OK\r\n:2\r\n$1\r\n2\r\n$-1\r\n+OK\r\n*3\r\n$1\r\n2\r\n$1\r\nx\r\n$-1\r\n:2\r\n"
            ":1\r\n$-1\r\n+PONG\r\n");
  // Three runs of writes, three of reads.
  EXPECT_EQ(backend_->values.size(), 3u);
  EXPECT_EQ(backend_->barriers, 3);
}

TEST_F(KvSessionTest, BadRequestsGetErrorsAndTheConnectionGoesOn) {
  bool open = false;
  const std::string out = Send("FLUSHALL\r\nSET k\r\nGET\r\nSET k v EX 1\r\nCONFIG SET a b\r\nPING\r\n",
                               &open);
  EXPECT_TRUE(open);
  EXPECT_EQ(out,
            "-ERR unknown command 'FLUSHALL', with args beginning with: \r\n"
            "-ERR wrong number of arguments for 'set' command\r\n"
            "-ERR wrong number of arguments for 'get' command\r\n"
            "-ERR syntax error\r\n"
            "-ERR only CONFIG GET <parameter> is supported\r\n"
            "+PONG\r\n");
  EXPECT_TRUE(backend_->values.empty());
  EXPECT_EQ(backend_->stats()->failed_requests.load(), 5u);
}

TEST_F(KvSessionTest, ProtocolErrorRepliesAfterTheGoodRequestsAndCloses) {
  bool open = true;
  const std::string out = Send("PING\r\n*1\r\n$x\r\nPING\r\n", &open);
  EXPECT_FALSE(open);
  EXPECT_EQ(out, "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n");
  EXPECT_EQ(backend_->stats()->protocol_errors.load(), 1u);
}

TEST_F(KvSessionTest, QuitClosesAfterItsReply) {
  bool open = true;
  EXPECT_EQ(Send("PING\r\nQUIT\r\nPING\r\n", &open), "+PONG\r\n+OK\r\n");
  EXPECT_FALSE(open);
}

TEST_F(KvSessionTest, WhatRedisToolsAskAtStart) {
  EXPECT_EQ(Send("*3\r\n$6\r\nCONFIG\r\n$3\r\nGET\r\n$4\r\nsave\r\n"),
            "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
  EXPECT_EQ(Send("CONFIG GET appendonly\r\n"), "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n");
  EXPECT_EQ(Send("COMMAND DOCS\r\n"), "*0\r\n");
  EXPECT_EQ(Send("CLIENT SETNAME bench\r\nCLIENT GETNAME\r\nCLIENT ID\r\n"),
            "+OK\r\n$5\r\nbench\r\n:7\r\n");
  EXPECT_EQ(Send("SELECT 0\r\nSELECT 1\r\n"), "+OK\r\n-ERR DB index is out of range\r\n");
  EXPECT_EQ(Send("INFO\r\n"), "$28\r\n# Replication\r\nrole:master\r\n\r\n");
}

TEST_F(KvSessionTest, FailedProposalAndBarrierAnswerEveryRequest) {
  backend_->write_status = Status::Timeout("not chosen in time");
  EXPECT_EQ(Send("SET a 1\r\nSET b 2\r\n"),
            "-TIMEOUT outcome unknown: Timeout: not chosen in time\r\n"
            "-TIMEOUT outcome unknown: Timeout: not chosen in time\r\n");
  backend_->barrier_status = Status::Busy("no master");
  EXPECT_EQ(Send("GET a\r\nPING\r\n"), "-TRYAGAIN Busy: no master\r\n+PONG\r\n");
}

TEST_F(KvSessionTest, ManyWritesAreSplitIntoBoundedValues) {
  SessionOptions o;
  o.max_ops_per_value = 10;
  o.max_value_bytes = 1000;
  session_ = std::make_unique<KvSession>(backend_.get(), o, 1);
  std::string in;
  for (int i = 0; i < 25; ++i) in += "INCR n\r\n";
  in += "SET big " + std::string(2000, 'x') + "\r\n";  // larger than a value: goes alone
  const std::string out = Send(in);
  EXPECT_EQ(out.substr(out.size() - 5), "+OK\r\n");
  EXPECT_NE(out.find(":25\r\n"), std::string::npos);
  ASSERT_EQ(backend_->values.size(), 4u);  // 10 + 10 + 5 INCRs, then the SET
  for (const std::string& v : backend_->values) EXPECT_LE(v.size(), 2100u);
}

TEST_F(KvSessionTest, MembershipCommandsGoToTheBackend) {
  EXPECT_EQ(Send("CHORUS.MEMBERS\r\n"),
            "*2\r\n$9\r\nversion 2\r\n$22\r\nvoter 1@127.0.0.1:7001\r\n");
  EXPECT_EQ(Send("chorus.addmember 4@127.0.0.1:7004\r\n"), "+OK\r\n");
  EXPECT_EQ(Send("CHORUS.CHANGEMEMBER 3 4@127.0.0.1:7004\r\n"), "+OK\r\n");
  EXPECT_EQ(Send("CHORUS.REMOVEMEMBER\r\n"),
            "-ERR wrong number of arguments for 'chorus.removemember' command\r\n");
  backend_->membership_status = Status::Busy("unsafe: 1 of 2 voters live");
  EXPECT_EQ(Send("CHORUS.REMOVEMEMBER 3\r\n"), "-TRYAGAIN Busy: unsafe: 1 of 2 voters live\r\n");
  EXPECT_EQ(Send("CHORUS.NOSUCH\r\n").compare(0, 24, "-ERR unknown command 'CH"), 0);
  EXPECT_EQ(backend_->membership_calls,
            (std::vector<std::string>{"members", "add 4@127.0.0.1:7004",
                                      "change 3 4@127.0.0.1:7004", "remove 3"}));
}

TEST_F(KvSessionTest, CompareAndSetIsAReplicatedWrite) {
  EXPECT_EQ(Send("SET k a\r\nCHORUS.CAS k a b\r\nCHORUS.CAS k a c\r\nGET k\r\n"),
            "+OK\r\n:1\r\n:0\r\n$1\r\nb\r\n");
  // The three writes went as one proposed value, in order.
  ASSERT_EQ(backend_->values.size(), 1u);
  std::vector<WriteOp> ops;
  ASSERT_TRUE(DecodeOps(backend_->values[0], &ops));
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[1].code, OpCode::kCas);
  EXPECT_EQ(ops[1].args, (std::vector<std::string>{"k", "a", "b"}));
  // "" (an empty bulk string) expects the key absent.
  EXPECT_EQ(Send("*4\r\n$10\r\nCHORUS.CAS\r\n$3\r\nnew\r\n$0\r\n\r\n$1\r\nx\r\n"), ":1\r\n");
  EXPECT_EQ(Send("GET new\r\n"), "$1\r\nx\r\n");
  // Refused before anything is proposed.
  EXPECT_EQ(Send("CHORUS.CAS k b\r\n*4\r\n$10\r\nCHORUS.CAS\r\n$1\r\nk\r\n$1\r\nb\r\n$0\r\n\r\n"),
            "-ERR wrong number of arguments for 'chorus.cas' command\r\n"
            "-ERR CHORUS.CAS: the new value must not be empty\r\n");
  EXPECT_EQ(backend_->values.size(), 2u);
  // A proposal that timed out answers as SET does.
  backend_->write_status = Status::Timeout("not chosen in time");
  EXPECT_EQ(Send("CHORUS.CAS k b c\r\n"), "-TIMEOUT outcome unknown: Timeout: not chosen in time\r\n");
}

TEST_F(KvSessionTest, TransferGoesToTheBackend) {
  EXPECT_EQ(Send("CHORUS.TRANSFER 2\r\nchorus.transfer 9223372036854775807\r\n"), "+OK\r\n+OK\r\n");
  EXPECT_EQ(backend_->transfers, (std::vector<uint64_t>{2, 9223372036854775807u}));
  backend_->transfer_status = Status::NotMaster("the master is 1@127.0.0.1:7001");
  EXPECT_EQ(Send("CHORUS.TRANSFER 3\r\n"), "-ERR NotMaster: the master is 1@127.0.0.1:7001\r\n");
  for (const char* bad : {"0", "x", "-1", "18446744073709551616", "2a"}) {
    EXPECT_EQ(Send(std::string("CHORUS.TRANSFER ") + bad + "\r\n"),
              "-ERR CHORUS.TRANSFER: node id must be a positive integer\r\n")
        << bad;
  }
  EXPECT_EQ(Send("CHORUS.TRANSFER\r\n"),
            "-ERR wrong number of arguments for 'chorus.transfer' command\r\n");
  EXPECT_EQ(backend_->transfers.size(), 3u);
  EXPECT_TRUE(backend_->values.empty());
}

}  // namespace
}  // namespace kv
}  // namespace chorus
