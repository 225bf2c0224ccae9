// A one-file chorus application, built against the installed package by
// unittest/install/install_test.sh: opens a 1-node cluster on a free loopback
// port with its log in argv[1] (created: its first start), proposes one
// value with a deadline, checks that the state machine executed it under the
// proposal id Propose returned, stops. Mirrors README.md's "Embed it".
// Prints "install_app: ok ..." and exits 0 on success; prints the failure
// and exits 1 otherwise.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <chorus/leveldb_log_storage.h>
#include <chorus/node.h>
#include <chorus/options.h>
#include <chorus/state_machine.h>
#include <chorus/status.h>

namespace {

// Remembers every value it executes.
class RecordingStateMachine : public chorus::StateMachine {
 public:
  int id() const override { return 1; }
  chorus::Status Execute(const chorus::ExecuteInfo& info, const std::string& value,
                         chorus::ExecuteContext* ctx) override {
    std::lock_guard<std::mutex> lock(mu_);
    executed_.push_back(std::to_string(info.instance) + ":" + std::to_string(info.proposal_id) +
                        ":" + value);
    if (ctx != nullptr) ctx->output = "echo:" + value;
    return chorus::Status::OK();
  }
  // An instance with nothing for this state machine (e.g. a noop).
  void ExecuteNoop(uint32_t /*group*/, uint64_t instance) override {
    std::lock_guard<std::mutex> lock(mu_);
    executed_.push_back(std::to_string(instance) + ":noop");
  }
  std::vector<std::string> executed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return executed_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> executed_;  // GUARDED_BY(mu_)
};

// A loopback port that was free a moment ago (0 on failure).
uint16_t FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

int Fail(const std::string& what) {
  std::printf("install_app: FAILED: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  RecordingStateMachine sm;
  chorus::Options options;
  options.self.host = "127.0.0.1";
  options.self.port = FreeLoopbackPort();
  if (options.self.port == 0) return Fail("no free loopback port");
  options.nodes = {options.self};
  options.data_dir = argv[1];
  options.create_if_missing = true;  // the first start of this node
  options.state_machines = {{0, &sm}};

  std::unique_ptr<chorus::Node> node;
  chorus::Status s = chorus::Node::Open(options, &node);
  if (!s.ok()) return Fail("Open: " + s.ToString());

  const std::string value = "hello from an installed chorus";
  uint64_t instance = 0;
  chorus::ExecuteContext ctx;
  ctx.timeout_ms = 10000;  // this call's deadline
  s = node->Propose(0, value, &instance, &ctx);
  node->Stop();
  if (!s.ok()) return Fail("Propose: " + s.ToString());
  if (ctx.proposal_id == 0) return Fail("Propose set no proposal id");

  const std::vector<std::string> executed = sm.executed();
  const std::string expected =
      std::to_string(instance) + ":" + std::to_string(ctx.proposal_id) + ":" + value;
  bool found = false;
  for (const std::string& e : executed) found = found || e == expected;
  if (!found) return Fail("the value was not executed at instance " + std::to_string(instance));
  if (ctx.output != "echo:" + value) return Fail("unexpected output '" + ctx.output + "'");
  std::printf("install_app: ok instance=%llu executed=%zu\n",
              static_cast<unsigned long long>(instance), executed.size());
  return 0;
}
