// Copyright (c) chorus authors.
#include "net.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace chorus {
namespace nemesis {
namespace {

// The name prefix of every namespace and link a run makes ("nm<pid>").
const char kPrefix[] = "nm";

std::string Quote(const std::string& s) { return "'" + s + "'"; }

}  // namespace

Status RunShell(const std::string& command, std::string* output) {
  FILE* p = ::popen(("{ " + command + "\n} 2>&1").c_str(), "r");
  if (p == nullptr) return Status::IOError("popen: " + command);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int rc = ::pclose(p);
  if (output != nullptr) *output = out;
  if (rc != 0) {
    const int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    return Status::IOError("`" + command + "` exited " + std::to_string(code) + ": " + out);
  }
  return Status::OK();
}

Network::Network(int slots, int pid)
    : slots_(slots), prefix_(kPrefix + std::to_string(pid)) {
  // 10.[200,249].[0,255]: a /24 per pid (modulo 12800 pids).
  subnet_ = "10." + std::to_string(200 + (pid / 256) % 50) + "." + std::to_string(pid % 256) + ".";
}

Network::~Network() { Destroy(); }

std::string Network::Namespace(int slot) const { return prefix_ + "n" + std::to_string(slot); }
std::string Network::NodeIp(int slot) const { return subnet_ + std::to_string(slot + 1); }
std::string Network::ClientIp() const { return subnet_ + "254"; }

Status Network::Create(int slots, std::unique_ptr<Network>* network) {
  if (::geteuid() != 0) {
    return Status::NotSupported(
        "the nemesis needs root (network namespaces and nftables rules): run it as root "
        "(CI does)");
  }
  for (const char* tool : {"ip", "nft"}) {
    if (!RunShell(std::string("command -v ") + tool).ok()) {
      return Status::NotSupported(std::string("the nemesis needs `") + tool +
                                  "` (Debian iproute2 and nftables: scripts/install_deps.sh)");
    }
  }
  if (slots < 1 || slots > 32) return Status::InvalidArgument("slots must be in [1, 32]");
  std::unique_ptr<Network> n(new Network(slots, static_cast<int>(::getpid())));
  Status s = n->Build();
  if (!s.ok()) {
    n->Destroy();
    return s;
  }
  *network = std::move(n);
  return Status::OK();
}

Status Network::Build() {
  std::string routes;
  Status s = RunShell("ip -4 route show " + subnet_ + "0/24", &routes);
  if (!s.ok()) return s;
  if (!routes.empty()) {
    return Status::Busy("subnet " + subnet_ + "0/24 is already in use (another run?): " + routes);
  }
  built_ = true;
  const std::string hub = prefix_ + "h";
  std::ostringstream c;
  c << "set -e; ip netns add " << hub << "; ip -n " << hub << " link add br0 type bridge; "
    << "ip -n " << hub << " link set br0 up; ";
  for (int i = 0; i < slots_; ++i) {
    const std::string ns = Namespace(i);
    const std::string a = prefix_ + "a" + std::to_string(i);  // hub side
    const std::string b = prefix_ + "b" + std::to_string(i);  // replica side
    c << "ip netns add " << ns << "; ip link add " << a << " type veth peer name " << b << "; "
      << "ip link set " << a << " netns " << hub << "; ip link set " << b << " netns " << ns
      << "; ip -n " << hub << " link set " << a << " master br0 up; "
      << "ip -n " << ns << " addr add " << NodeIp(i) << "/24 dev " << b << "; "
      << "ip -n " << ns << " link set " << b << " up; ip -n " << ns << " link set lo up; ";
  }
  const std::string client = prefix_ + "c";
  c << "ip link add " << client << " type veth peer name " << client << "h; "
    << "ip link set " << client << "h netns " << hub << "; "
    << "ip -n " << hub << " link set " << client << "h master br0 up; "
    << "ip addr add " << ClientIp() << "/24 dev " << client << "; ip link set " << client
    << " up";
  s = RunShell(c.str());
  if (!s.ok()) return s;
  return Heal();
}

void Network::Destroy() {
  if (!built_) return;
  built_ = false;
  std::string c = "ip link del " + prefix_ + "c; ip netns del " + prefix_ + "h";
  for (int i = 0; i < slots_; ++i) c += "; ip netns del " + Namespace(i);
  RunShell(c);  // parts may be missing already: best effort
}

int Network::RemoveLeftovers() {
  std::string list;
  if (!RunShell("ip netns list", &list).ok()) return 0;
  std::istringstream in(list);
  std::string line;
  std::set<int> dead;
  const size_t plen = sizeof(kPrefix) - 1;
  while (std::getline(in, line)) {
    // "nm<pid>h", "nm<pid>n<slot>" (maybe followed by " (id: N)").
    if (line.compare(0, plen, kPrefix) != 0) continue;
    size_t end = plen;
    while (end < line.size() && isdigit(static_cast<unsigned char>(line[end]))) ++end;
    if (end == plen || end >= line.size() || (line[end] != 'h' && line[end] != 'n')) continue;
    const int pid = std::stoi(line.substr(plen, end - plen));
    if (pid == static_cast<int>(::getpid())) continue;
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::string name;
    if (comm && std::getline(comm, name) && name == "nemesis") continue;  // alive
    dead.insert(pid);
    // Its replicas first (a harness killed with SIGKILL leaves them).
    const std::string ns = Quote(line.substr(0, line.find(' ')));
    RunShell("ip netns pids " + ns + " | xargs -r kill -9; ip netns del " + ns);
  }
  for (int pid : dead) {
    RunShell(std::string("ip link del ") + kPrefix + std::to_string(pid) + "c");
  }
  return static_cast<int>(dead.size());
}

Status Network::Apply(const std::vector<std::set<int>>& blocked, int loss_percent) {
  for (int i = 0; i < slots_; ++i) {
    std::ostringstream r;
    r << "table inet nemesis\ndelete table inet nemesis\n"
      << "table inet nemesis {\n"
      << "  chain input { type filter hook input priority 0; policy accept; }\n"
      << "  chain output { type filter hook output priority 0; policy accept; }\n}\n";
    if (i < static_cast<int>(blocked.size()) && !blocked[i].empty()) {
      std::string set;
      for (int peer : blocked[i]) set += (set.empty() ? "" : ", ") + NodeIp(peer);
      r << "add rule inet nemesis input ip saddr { " << set << " } drop\n"
        << "add rule inet nemesis output ip daddr { " << set << " } drop\n";
    }
    if (loss_percent > 0) {
      r << "add rule inet nemesis input ip saddr " << subnet_ << "0/24 ip saddr != " << ClientIp()
        << " numgen random mod 100 < " << loss_percent << " drop\n";
    }
    Status s = RunShell("ip netns exec " + Namespace(i) + " nft -f - <<'EOF'\n" + r.str() + "EOF");
    if (!s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace nemesis
}  // namespace chorus
