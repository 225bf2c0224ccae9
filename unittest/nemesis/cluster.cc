// Copyright (c) chorus authors.
#include "cluster.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "clock.h"

namespace chorus {
namespace nemesis {

Cluster::Cluster(Network* network, const ClusterOptions& options)
    : network_(network), options_(options), procs_(network->slots()) {
  fork_thread_ = std::thread([this] { ForkLoop(); });
}

Cluster::~Cluster() {
  for (int i = 0; i < static_cast<int>(procs_.size()); ++i) Kill(i);
  {
    std::lock_guard<std::mutex> lock(fork_mu_);
    fork_stop_ = true;
  }
  fork_cv_.notify_all();
  fork_thread_.join();
}

void Cluster::ForkLoop() {
  std::unique_lock<std::mutex> lock(fork_mu_);
  while (true) {
    fork_cv_.wait(lock, [this] { return fork_stop_ || fork_task_; });
    if (fork_stop_) return;
    fork_result_ = fork_task_();
    fork_task_ = nullptr;
    fork_done_ = true;
    fork_cv_.notify_all();
  }
}

pid_t Cluster::OnForkThread(const std::function<pid_t()>& fork_and_exec) {
  std::lock_guard<std::mutex> caller(fork_caller_mu_);
  std::unique_lock<std::mutex> lock(fork_mu_);
  fork_task_ = fork_and_exec;
  fork_done_ = false;
  fork_cv_.notify_all();
  fork_cv_.wait(lock, [this] { return fork_done_; });
  return fork_result_;
}

std::string Cluster::Address(int slot) const {
  return std::to_string(IdOf(slot)) + "@" + Ip(slot) + ":" + std::to_string(kChorusPort);
}

std::string Cluster::NodesList(const std::vector<int>& slots) const {
  std::string s;
  for (int slot : slots) s += (s.empty() ? "" : ",") + Address(slot);
  return s;
}

std::vector<int> Cluster::members() const {
  std::lock_guard<std::mutex> lock(mu_);
  return members_;
}

bool Cluster::Running(int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  return procs_[slot].pid > 0;
}

bool Cluster::Paused(int slot) const {
  std::lock_guard<std::mutex> lock(mu_);
  return procs_[slot].paused;
}

Status Cluster::Spawn(int slot, const std::vector<std::string>& extra) {
  const std::string data = options_.run_dir + "/data" + std::to_string(slot);
  std::vector<std::string> args = {options_.kv_server,
                                   "--node=" + Address(slot),
                                   "--data_dir=" + data,
                                   "--bind=" + Ip(slot),
                                   "--port=" + std::to_string(kRespPort),
                                   "--propose_timeout_ms=" + std::to_string(options_.propose_timeout_ms),
                                   "--retry_ms=" + std::to_string(options_.retry_ms),
                                   "--checkpoint_interval=" + std::to_string(options_.checkpoint_interval),
                                   "--log_keep=" + std::to_string(options_.log_keep),
                                   "--membership_timeout_ms=" + std::to_string(options_.membership_timeout_ms),
                                   "--log_level=info"};
  if (options_.stale_reads) args.push_back("--stale_reads");
  args.insert(args.end(), extra.begin(), extra.end());
  // Everything the child needs is ready before fork: the harness has
  // threads, so the child only makes async-signal-safe calls.
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  const std::string ns_path = "/run/netns/" + network_->Namespace(slot);
  const std::string out = options_.run_dir + "/out" + std::to_string(slot);
  const std::string err = options_.run_dir + "/err" + std::to_string(slot);
  const pid_t parent = ::getpid();
  const pid_t pid = OnForkThread([&]() -> pid_t {
    const pid_t child = ::fork();
    if (child != 0) return child;
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int ns = ::open(ns_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns < 0 || ::setns(ns, CLONE_NEWNET) != 0) ::_exit(126);
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(125);
    ::execv(argv[0], argv.data());
    ::_exit(124);
  });
  if (pid < 0) return Status::FromErrno("fork", errno);
  std::lock_guard<std::mutex> lock(mu_);
  procs_[slot].pid = pid;
  procs_[slot].paused = false;
  procs_[slot].started_once = true;
  return Status::OK();
}

Status Cluster::WaitServing(int slot, int timeout_ms) {
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_ms) * 1000000;
  while (true) {
    pid_t pid;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pid = procs_[slot].pid;
    }
    int wstatus = 0;
    if (pid <= 0 || ::waitpid(pid, &wstatus, WNOHANG) == pid) {
      std::lock_guard<std::mutex> lock(mu_);
      procs_[slot].pid = -1;
      return Status::IOError("kv_server of slot " + std::to_string(slot) +
                             " exited (see " + options_.run_dir + "/err" + std::to_string(slot) +
                             ")");
    }
    RespReply r;
    if (Command(slot, {"PING"}, &r, 500).ok() && r.type == RespReply::Type::kSimple) {
      return Status::OK();
    }
    if (NowNs() > deadline) {
      return Status::Timeout("slot " + std::to_string(slot) + " serves no RESP");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

Status Cluster::StartInitial(int timeout_ms) {
  std::vector<int> initial;
  for (int i = 0; i < options_.voters; ++i) initial.push_back(i);
  {
    std::lock_guard<std::mutex> lock(mu_);
    members_ = initial;
  }
  for (int slot : initial) {
    Status s = Spawn(slot, {"--nodes=" + NodesList(initial), "--create_if_missing"});
    if (!s.ok()) return s;
  }
  for (int slot : initial) {
    Status s = WaitServing(slot, timeout_ms);
    if (!s.ok()) return s;
  }
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_ms) * 1000000;
  while (Master() < 0) {
    if (NowNs() > deadline) return Status::Timeout("the initial members elect no master");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::OK();
}

Status Cluster::Restart(int slot, int timeout_ms) {
  if (Running(slot)) return Status::OK();
  // The log's membership wins on a restart; --nodes is still required.
  Status s = Spawn(slot, {"--nodes=" + NodesList(members())});
  if (!s.ok()) return s;
  return WaitServing(slot, timeout_ms);
}

void Cluster::Kill(int slot) {
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pid = procs_[slot].pid;
    procs_[slot].pid = -1;
    procs_[slot].paused = false;
  }
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

void Cluster::Pause(int slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (procs_[slot].pid <= 0) return;
  ::kill(procs_[slot].pid, SIGSTOP);
  procs_[slot].paused = true;
}

void Cluster::Resume(int slot) {
  std::lock_guard<std::mutex> lock(mu_);
  if (procs_[slot].pid <= 0) return;
  ::kill(procs_[slot].pid, SIGCONT);
  procs_[slot].paused = false;
}

Status Cluster::ResumeAll(int timeout_ms) {
  for (int slot : members()) {
    if (Paused(slot)) Resume(slot);
  }
  for (int slot : members()) {
    if (Running(slot)) continue;
    Status s = Restart(slot, timeout_ms);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status Cluster::Command(int slot, const std::vector<std::string>& args, RespReply* reply,
                        int timeout_ms) {
  RespClient c;
  const int t = timeout_ms > 0 ? timeout_ms : options_.command_timeout_ms;
  Status s = c.Connect(Ip(slot), kRespPort, t);
  if (!s.ok()) return s;
  return c.Command(args, reply);
}

Status Cluster::Info(int slot, std::map<std::string, std::string>* fields) {
  RespReply r;
  Status s = Command(slot, {"INFO"}, &r, 1000);
  if (!s.ok()) return s;
  if (r.type != RespReply::Type::kBulk) return Status::Corruption("INFO: " + r.text);
  std::istringstream in(r.text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos || line[0] == '#') continue;
    (*fields)[line.substr(0, colon)] = line.substr(colon + 1);
  }
  return Status::OK();
}

int Cluster::Master() {
  int master = -1;
  for (int slot : members()) {
    if (!Running(slot) || Paused(slot)) continue;
    std::map<std::string, std::string> f;
    if (!Info(slot, &f).ok()) return -1;
    const int id = std::atoi(f["master_id"].c_str());
    if (id <= 0) return -1;
    if (master >= 0 && master != id - 1) return -1;
    master = id - 1;
  }
  return master;
}

Status Cluster::MembershipHas(const std::vector<int>& via, int slot, bool* voter) {
  const int64_t deadline = NowNs() + 30000LL * 1000000;
  const std::string line = "voter " + Address(slot);
  while (NowNs() < deadline) {
    for (int v : via) {
      RespReply r;
      if (!Command(v, {"CHORUS.MEMBERS"}, &r).ok() || r.type != RespReply::Type::kArray) continue;
      bool pending = false;
      *voter = false;
      for (const RespReply& e : r.elements) {
        pending = pending || e.text == "pending 1";
        *voter = *voter || e.text == line;
      }
      if (!pending) return Status::OK();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  return Status::Timeout("the membership stays pending");
}

Status Cluster::ReplaceMember(int old_slot, int spare, int timeout_ms, std::string* answer) {
  std::vector<int> others;
  for (int slot : members()) {
    if (slot != old_slot) others.push_back(slot);
  }
  Status s = Spawn(spare, {"--join=" + NodesList(others), "--create_if_missing"});
  if (s.ok()) s = WaitServing(spare, timeout_ms);
  if (!s.ok()) {
    Kill(spare);
    return s;
  }
  const int64_t deadline = NowNs() + static_cast<int64_t>(timeout_ms) * 1000000;
  size_t next = 0;
  while (true) {
    const int via = others[next++ % others.size()];
    RespReply r;
    s = Command(via, {"CHORUS.CHANGEMEMBER", std::to_string(IdOf(old_slot)), Address(spare)}, &r,
                options_.membership_timeout_ms + 5000);
    *answer = s.ok() ? (r.type == RespReply::Type::kError ? "-" : "+") + r.text : s.ToString();
    if (s.ok() && r.type == RespReply::Type::kSimple && r.text == "OK") break;
    const bool retry = !s.ok() || r.text.compare(0, 8, "TRYAGAIN") == 0;
    if (!retry || NowNs() > deadline) {
      // The outcome may be unknown (TIMEOUT): the group's membership says.
      bool changed = false;
      s = Status::IOError("CHORUS.CHANGEMEMBER through node " + std::to_string(IdOf(via)) +
                          ": " + *answer);
      if (MembershipHas(others, spare, &changed).ok() && changed) break;
      Kill(spare);
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::replace(members_.begin(), members_.end(), old_slot, spare);
  }
  Kill(old_slot);
  return Status::OK();
}

}  // namespace nemesis
}  // namespace chorus
