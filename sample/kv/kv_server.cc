// kv_server: one replica of chorus-kv, a replicated key-value store that
// Redis clients (redis-cli, redis-benchmark, client libraries) talk to over
// RESP2 on --port.
//
//   kv_server --node=1@127.0.0.1:7001 --nodes=1@127.0.0.1:7001,2@127.0.0.1:7002,3@127.0.0.1:7003
//       --data_dir=/tmp/kv1 --port=6401 [--create_if_missing]   (on the first start only)
//   kv_server --node=4@127.0.0.1:7004 --join=1@127.0.0.1:7001,2@127.0.0.1:7002
//       --data_dir=/tmp/kv4 --port=6404 --create_if_missing
//       (a new replica: it joins through those members and serves once a member
//       added it: redis-cli -p 6401 CHORUS.ADDMEMBER 4@127.0.0.1:7004)
//
// The state lives in a KvStore (its own leveldb under --kv_dir, default
// <data_dir>/kv) replicated by one chorus group with master election on.
// Writes (SET [NX|XX], DEL, INCR, INCRBY, DECR, DECRBY, MSET, and
// CHORUS.CAS key expected new: a compare-and-set, kv_session.h) are proposed
// with BatchPropose on whichever node the client is connected to (a follower
// forwards them to the master) and answered with what the state machine
// replied. Reads (GET, MGET, EXISTS, DBSIZE, DEBUG DIGEST) wait for
// Node::ReadBarrier, then read the local store: a lease read on the master,
// a read index on a follower; --stale_reads skips the barrier (faster, may
// return old values). PING, ECHO, INFO, SELECT 0, QUIT, and the CLIENT /
// CONFIG GET / COMMAND replies that redis-cli and redis-benchmark ask for at
// start are answered locally; anything else gets an error reply. The
// CHORUS.* commands (kv_session.h) change the group's membership:
// CHORUS.MEMBERS, CHORUS.ADDMEMBER, CHORUS.ADDFOLLOWER, CHORUS.PROMOTE,
// CHORUS.REMOVEMEMBER, CHORUS.CHANGEMEMBER; CHORUS.TRANSFER id hands the
// mastership to member id (sent to the master; ids as tools/member_commands.h parses them).
//
// stdout (one line each, flushed at once):
//   ready node=<ip:port> id=<id> resp=<ip:port>     serving clients
//   role is_master=<0|1>                             this node gained / lost the mastership
// Stops on SIGINT or SIGTERM.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <gflags/gflags.h>

#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/status.h"
#include "sample/kv/kv_session.h"
#include "sample/kv/kv_store.h"
#include "tools/member_commands.h"
#include "tools/node_flags.h"
#include "tools/print_line.h"
#include "tools/program_flags.h"
#include "tools/stop_signals.h"
#ifdef CHORUS_HAVE_PROMETHEUS
#include "chorus/metrics_server.h"
#endif

DEFINE_string(node, "", "this node, [id@]host:port of its chorus transport (REQUIRED)");
DEFINE_string(nodes, "",
              "the initial members, [id@]host:port,... (REQUIRED unless --join; the log's "
              "membership wins on later starts)");
DEFINE_string(join, "",
              "a NEW replica: join the cluster through these members, [id@]host:port,... "
              "(then --nodes is empty; a member adds it: CHORUS.ADDMEMBER)");
DEFINE_string(data_dir, "", "directory of this node's paxos log (REQUIRED)");
DEFINE_string(kv_dir, "", "directory of the kv store's leveldb (default <data_dir>/kv)");
DEFINE_bool(create_if_missing, false,
            "create the paxos log and the kv store when missing: only on this node's first "
            "start (without it a missing one is an error, never a silent fresh start)");
DEFINE_string(bind, "127.0.0.1", "address the RESP port listens on");
DEFINE_int32(port, 0, "the RESP port clients connect to (REQUIRED)");
DEFINE_bool(stale_reads, false,
            "serve reads from the local store without a read barrier (may return old values)");
DEFINE_bool(sync_writes, true, "fsync every promise/accept (false: faster, unsafe)");
DEFINE_int32(max_clients, 1024, "connections served at once; more get an error and are closed");
DEFINE_int32(retry_ms, 3000,
             "how long a write or read that chorus refused with Busy (no master yet, overload: "
             "never proposed) is retried before the client gets TRYAGAIN");
DEFINE_int32(propose_timeout_ms, 5000, "Options::propose_timeout_ms");
DEFINE_int32(batch_max_count, 64, "Options::batch_max_count (values per paxos instance)");
DEFINE_int32(batch_delay_ms, 0, "Options::batch_delay_ms");
DEFINE_uint64(checkpoint_interval, 100000,
              "Options::checkpoint_interval_instances (0: no checkpoints, no log trimming)");
DEFINE_uint64(log_keep, 20000, "Options::log_keep_instances");
DEFINE_int32(membership_timeout_ms, 120000, "Options::membership_timeout_ms");
DEFINE_string(log_level, "warning",
              "chorus's log lines (stderr) at this level and above: debug, info, warning, "
              "error, none");
DEFINE_int32(metrics_port, 0,
             "serve GET /metrics (Prometheus text format) and GET /status (JSON) on --bind:"
             "this port; 0: off (needs a build with prometheus-cpp-dev)");

namespace {

using chorus::Status;
using chorus::kv::KvStore;
using Clock = std::chrono::steady_clock;

class ReplicaBackend : public chorus::kv::KvBackend {
 public:
  ReplicaBackend(chorus::Node* node, KvStore* store) : node_(node), store_(store) {}

  Status Write(const std::string& value, std::string* replies) override {
    const auto deadline = Clock::now() + std::chrono::milliseconds(FLAGS_retry_ms);
    while (true) {
      chorus::ExecuteContext ctx;
      Status s = node_->BatchPropose(0, value, nullptr, nullptr, &ctx);
      if (s.ok()) {
        *replies = std::move(ctx.output);
        return s;
      }
      // Busy is definite (never proposed): safe to try again.
      if (!s.IsBusy() || Clock::now() >= deadline) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  Status ReadBarrier() override {
    if (FLAGS_stale_reads) return Status::OK();
    const auto deadline = Clock::now() + std::chrono::milliseconds(FLAGS_retry_ms);
    while (true) {
      Status s = node_->ReadBarrier(0, nullptr);
      if (s.ok() || !s.IsBusy() || Clock::now() >= deadline) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  Status Get(const std::string& key, std::string* value) override {
    return store_->Get(key, value);
  }
  Status Count(uint64_t* keys, uint32_t* digest) override { return store_->Count(keys, digest); }
  chorus::kv::SessionStats* stats() override { return &stats_; }

  Status Membership(const std::string& verb, const std::vector<std::string>& args,
                    std::vector<std::string>* lines) override {
    chorus::MembershipInfo info;
    Status s = chorus::RunMemberCommand(node_, 0, verb, args, &info);
    if (!s.ok() || verb != "members") return s;
    chorus::GroupStatus g;
    node_->GetGroupStatus(0, &g);
    lines->push_back("version " + std::to_string(info.version));
    lines->push_back("active_from " + std::to_string(info.active_from));
    lines->push_back(std::string("pending ") + (info.pending ? "1" : "0"));
    lines->push_back(std::string("role ") + chorus::MemberRoleText(g.role));
    for (const bool voters : {true, false}) {  // voters first
      for (const chorus::MemberInfo& m : info.members) {
        if (m.voter != voters) continue;
        lines->push_back((voters ? "voter " : "follower ") + chorus::MemberText(m));
      }
    }
    return s;
  }

  Status TransferMaster(uint64_t node_id) override { return node_->TransferMaster(0, node_id); }

  std::string Info() override {
    chorus::MasterInfo m;
    const bool known = node_->GetMaster(0, &m).ok() && m.known;
    const bool is_master = node_->IsMaster(0);
    chorus::GroupStatus g;
    node_->GetGroupStatus(0, &g);
    const chorus::kv::KvPosition p = store_->position();
    std::string s = "# Server\r\nredis_version:7.0.0\r\nchorus_kv:1\r\n";
    // No master_host / master_port: a Redis client would take them for the
    // master's RESP address, and this node knows only its chorus address
    // (`master` below); writes on any node reach the master anyway.
    s += "# Replication\r\nrole:" + std::string(is_master ? "master" : "slave") + "\r\n";
    auto field = [&s](const char* name, uint64_t v) {
      s += name;
      s += ":" + std::to_string(v) + "\r\n";
    };
    s += "# Chorus\r\nnode:" + FLAGS_node + "\r\n";
    field("node_id", node_->node_id());
    s += "master:" + (known ? chorus::DisplayAddress(m.node) : std::string("none")) + "\r\n";
    field("master_id", known ? m.node.id() : 0);
    field("master_epoch", known ? m.epoch_number : 0);
    field("is_master", is_master ? 1 : 0);
    field("executed_instance", g.executed);
    field("min_chosen_instance", node_->GetMinChosenInstanceId(0));
    field("master_chosen_end", g.master_chosen_end);
    field("caught_up", g.caught_up ? 1 : 0);
    field("checkpoint_instance", g.checkpoint_instance);
    field("log_start", g.log_start);
    field("checkpoints_made", g.checkpoints_made);
    field("checkpoints_loaded", g.checkpoints_loaded);
    s += std::string("member_role:") + chorus::MemberRoleText(g.role) + "\r\n";
    field("membership_version", g.membership_version);
    field("stale_reads", FLAGS_stale_reads ? 1 : 0);
    s += "# Kv\r\n";
    field("kv_next_instance", p.instance);
    field("kv_next_batch_index", p.batch_index);
    field("kv_writes_applied", store_->writes_applied());
    field("kv_checkpoints_loaded", store_->checkpoints_loaded());
    field("kv_requests", stats_.requests.load());
    field("kv_write_ops_acked", stats_.write_ops_acked.load());
    field("kv_failed_requests", stats_.failed_requests.load());
    field("kv_protocol_errors", stats_.protocol_errors.load());
    field("connected_clients", stats_.connections.load());
    return s;
  }

 private:
  chorus::Node* const node_;
  KvStore* const store_;
  chorus::kv::SessionStats stats_;
};

// Accepts connections and serves each on a thread of its own (blocking I/O:
// redis-benchmark's 50 connections are 50 threads, mostly waiting).
class Server {
 public:
  explicit Server(ReplicaBackend* backend) : backend_(backend) {}

  Status Listen(const std::string& ip, int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return Status::FromErrno("socket", errno);
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (::inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
      return Status::InvalidArgument("--bind: not an IPv4 address: " + ip);
    }
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
      return Status::FromErrno("bind " + ip + ":" + std::to_string(port), errno);
    }
    if (::listen(fd_, 512) != 0) return Status::FromErrno("listen", errno);
    return Status::OK();
  }

  void AcceptLoop() {
    while (true) {
      int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) {
        if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
          if (errno == EMFILE || errno == ENFILE) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          continue;
        }
        return;  // the listening socket was shut down: stopping
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_ || open_.size() >= static_cast<size_t>(FLAGS_max_clients)) {
        static const char kFull[] = "-ERR max number of clients reached\r\n";
        ssize_t ignored = ::send(c, kFull, sizeof(kFull) - 1, MSG_NOSIGNAL);
        (void)ignored;
        ::close(c);
        continue;
      }
      open_.insert(c);
      const uint64_t id = ++next_id_;
      std::thread([this, c, id] { Serve(c, id); }).detach();
    }
  }

  // Ends the accept loop and every connection, and waits for their threads.
  void Stop() {
    ::shutdown(fd_, SHUT_RDWR);
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    for (int c : open_) ::shutdown(c, SHUT_RDWR);
    done_.wait(lock, [this] { return open_.empty(); });
  }

 private:
  void Serve(int c, uint64_t id) {
    int one = 1;
    ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    backend_->stats()->connections.fetch_add(1);
    chorus::kv::KvSession session(backend_, chorus::kv::SessionOptions(), id);
    std::string buf(64 << 10, '\0');
    std::string out;
    while (true) {
      ssize_t n = ::recv(c, &buf[0], buf.size(), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      out.clear();
      const bool keep = session.OnData(buf.data(), static_cast<size_t>(n), &out);
      if (!SendAll(c, out) || !keep) break;
    }
    backend_->stats()->connections.fetch_sub(1);
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(c);
    ::close(c);
    done_.notify_all();
  }

  static bool SendAll(int c, const std::string& data) {
    size_t off = 0;
    while (off < data.size()) {
      ssize_t n = ::send(c, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  ReplicaBackend* const backend_;
  int fd_ = -1;
  std::mutex mu_;
  std::condition_variable done_;
  std::set<int> open_;     // GUARDED_BY(mu_): connections being served
  bool stopping_ = false;  // GUARDED_BY(mu_)
  uint64_t next_id_ = 0;   // GUARDED_BY(mu_)
};

int Usage(const std::string& problem) {
  std::fprintf(stderr, "kv_server: %s\n%s\n", problem.c_str(), gflags::ProgramUsage());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  chorus::ParseProgramFlags(
      "kv_server --node=[id@]host:port (--nodes=[id@]host:port,... | --join=...) "
      "--data_dir=DIR --port=N [--create_if_missing]\n"
      "one replica of chorus-kv; Redis clients (RESP2) connect to --port",
      &argc, &argv);
  chorus::Options options;
  std::string problem = chorus::SetNodeAddresses(FLAGS_node, FLAGS_nodes, FLAGS_data_dir,
                                                 &options, FLAGS_join);
  if (problem.empty()) problem = chorus::SetLogLevel(FLAGS_log_level, &options.log_level);
  if (!problem.empty()) return Usage(problem);
  if (FLAGS_port <= 0 || FLAGS_port > 65535) return Usage("--port must be in [1, 65535]");
  if (FLAGS_max_clients < 1) return Usage("--max_clients must be >= 1");
  if (FLAGS_retry_ms < 0) return Usage("--retry_ms must be >= 0");
  if (FLAGS_metrics_port < 0 || FLAGS_metrics_port > 65535) {
    return Usage("--metrics_port must be in [0, 65535]");
  }
#ifndef CHORUS_HAVE_PROMETHEUS
  if (FLAGS_metrics_port > 0) return Usage("--metrics_port: built without prometheus-cpp-dev");
#endif
  options.create_if_missing = FLAGS_create_if_missing;
  options.sync_writes = FLAGS_sync_writes;
  options.master_election = true;
  options.forward_to_master = true;
  options.propose_timeout_ms = FLAGS_propose_timeout_ms;
  options.batch_max_count = FLAGS_batch_max_count;
  options.batch_delay_ms = FLAGS_batch_delay_ms;
  options.checkpoint_interval_instances = FLAGS_checkpoint_interval;
  options.log_keep_instances = FLAGS_log_keep;
  options.membership_timeout_ms = FLAGS_membership_timeout_ms;
  options.on_master_change = [](uint32_t, bool is_master) {
    chorus::PrintLine(std::string("role is_master=") + (is_master ? "1" : "0"));
  };

  chorus::kv::KvStoreOptions store_options;
  store_options.create_if_missing = FLAGS_create_if_missing;
  std::unique_ptr<KvStore> store;
  const std::string kv_dir = FLAGS_kv_dir.empty() ? FLAGS_data_dir + "/kv" : FLAGS_kv_dir;
  Status s = KvStore::Open(kv_dir, store_options, &store);
  if (!s.ok()) {
    std::fprintf(stderr, "kv_server: kv store: %s\n", s.ToString().c_str());
    return 1;
  }
  options.state_machines.emplace_back(0, store.get());

  // SIGINT/SIGTERM are taken by sigwait below: block them before any thread
  // exists so that every thread inherits the mask.
  const sigset_t stop_signals = chorus::BlockStopSignals();
  std::unique_ptr<chorus::Node> node;
  s = chorus::Node::Open(options, &node);
  if (!s.ok()) {
    std::fprintf(stderr, "kv_server: Open: %s\n", s.ToString().c_str());
    return 1;
  }
  ReplicaBackend backend(node.get(), store.get());
  Server server(&backend);
  s = server.Listen(FLAGS_bind, FLAGS_port);
  if (!s.ok()) {
    std::fprintf(stderr, "kv_server: %s\n", s.ToString().c_str());
    return 1;
  }
#ifdef CHORUS_HAVE_PROMETHEUS
  std::unique_ptr<chorus::MetricsServer> metrics;  // stopped before the node goes
  if (FLAGS_metrics_port > 0) {
    chorus::MetricsServerOptions mo;
    mo.ip = FLAGS_bind;
    mo.port = static_cast<uint16_t>(FLAGS_metrics_port);
    s = chorus::MetricsServer::Start(node.get(), options, mo, &metrics);
    if (!s.ok()) {
      std::fprintf(stderr, "kv_server: --metrics_port: %s\n", s.ToString().c_str());
      return 1;
    }
  }
#endif
  std::thread acceptor([&server] { server.AcceptLoop(); });
  chorus::PrintLine("ready node=" + options.self.ToString() + " id=" +
                    std::to_string(node->node_id()) + " resp=" + FLAGS_bind + ":" +
                    std::to_string(FLAGS_port));

  chorus::WaitForStopSignal(stop_signals);
  node->Stop();  // waiting proposals and barriers return Stopped
  server.Stop();
  acceptor.join();
#ifdef CHORUS_HAVE_PROMETHEUS
  metrics.reset();  // before the node: it reads the node
#endif
  node.reset();
  store.reset();
  return 0;
}
