// chorus_admin: look inside a chorus node, offline (its data dir) or live
// (its /status endpoint). It never modifies a data dir (tools/admin/
// data_dir.h: a live dir is refused; a stopped one is read through a
// private copy).
//
//   chorus_admin [--json] [--checkpoint_dir=DIR] [--nodes=LIST] inspect DATA_DIR
//   chorus_admin [--json] verify DATA_DIR [--group=G]
//   chorus_admin [--json] [--hex] dump DATA_DIR --group=G [--from=A] [--to=B] [--limit=N]
//   chorus_admin [--json] live IP:PORT[,IP:PORT...]
//
// Exit status: 0 done (verify: every record good); 1 verify found a bad
// record, or the data could not be read; 2 bad usage, or the dir is held by
// a live process.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chorus/status.h"
#include "chorus/transport.h"
#include "node/checkpoint_store.h"
#include "node/fs_util.h"
#include "tools/admin/data_dir.h"
#include "tools/admin/live.h"
#include "tools/admin/log_reader.h"
#include "tools/admin/output.h"

namespace chorus {
namespace admin {
namespace {

constexpr char kUsage[] =
    "usage: chorus_admin [--json] [--checkpoint_dir=DIR] [--nodes=LIST] inspect DATA_DIR\n"
    "       chorus_admin [--json] verify DATA_DIR [--group=G]\n"
    "       chorus_admin [--json] [--hex] dump DATA_DIR --group=G [--from=A] [--to=B] [--limit=N]\n"
    "       chorus_admin [--json] live IP:PORT[,IP:PORT...]   (a node's /status endpoint)\n"
    "Offline commands never modify DATA_DIR: one a live node holds is refused (exit 2).\n"
    "inspect shows the membership the log recorded; --nodes=[id@]host:port,... (the node's\n"
    "initial --nodes) is shown as the genesis for a log that recorded none.\n";

struct Args {
  std::string command, target;
  std::map<std::string, std::string> flags;
  bool Has(const std::string& k) const { return flags.count(k) != 0; }
  std::string Get(const std::string& k, const std::string& d = "") const {
    auto it = flags.find(k);
    return it == flags.end() ? d : it->second;
  }
};

bool Parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s.compare(0, 2, "--") == 0) {
      const size_t eq = s.find('=');
      a->flags[s.substr(2, eq == std::string::npos ? std::string::npos : eq - 2)] =
          eq == std::string::npos ? "" : s.substr(eq + 1);
    } else if (a->command.empty()) {
      a->command = s;
    } else if (a->target.empty()) {
      a->target = s;
    } else {
      return false;
    }
  }
  return !a->command.empty() && !a->target.empty();
}

// The newest readable checkpoint of a group (tools never use the store
// itself: CheckpointStore::Open deletes leftovers).
struct CheckpointInfo {
  int count = 0;
  CheckpointManifest newest;
  bool found = false;
};
CheckpointInfo FindCheckpoint(const std::string& dir) {
  CheckpointInfo info;
  std::vector<std::string> names;
  if (!ListDir(dir, &names).ok()) return info;
  for (const std::string& n : names) {
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string bytes;
    CheckpointManifest m;
    if (!ReadWholeFile(dir + "/" + n + "/MANIFEST", &bytes).ok()) continue;
    if (!CheckpointManifest::Decode(bytes, &m).ok()) continue;
    ++info.count;
    if (!info.found || m.instance > info.newest.instance) info.newest = m;
    info.found = true;
  }
  return info;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "chorus_admin: %s\n", s.ToString().c_str());
  return s.IsBusy() || s.IsInvalidArgument() ? 2 : 1;
}

// The groups the command covers: --group, else every one of the dir.
Status Groups(const Args& a, std::vector<uint32_t>* groups) {
  if (a.Has("group")) {
    groups->assign(1, static_cast<uint32_t>(std::strtoul(a.Get("group").c_str(), nullptr, 10)));
    return Status::OK();
  }
  return ListGroups(a.target, groups);
}

// Refuses the whole dir when any group's log is held by a live process.
Status CheckNotLive(const std::string& data_dir, const std::vector<uint32_t>& groups) {
  for (uint32_t g : groups) {
    Status s = CheckLock(data_dir + "/g" + std::to_string(g));
    if (!s.ok()) return s;
  }
  return Status::OK();
}

// data_dir/IDENTITY as "key value" pairs (none when absent or unreadable).
std::vector<std::pair<std::string, std::string>> ReadIdentity(const std::string& data_dir) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::string text;
  if (!ReadWholeFile(data_dir + "/IDENTITY", &text).ok()) return pairs;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t space = line.find(' ');
    if (space != std::string::npos) pairs.emplace_back(line.substr(0, space), line.substr(space + 1));
    start = end + 1;
  }
  return pairs;
}

int Inspect(const Args& a, Output* out) {
  std::vector<uint32_t> groups;
  Status s = Groups(a, &groups);
  if (s.ok()) s = CheckNotLive(a.target, groups);
  if (!s.ok()) return Fail(s);
  const std::string cdir = a.Get("checkpoint_dir", a.target + "/checkpoints");
  out->BeginInspect(a.target, ReadIdentity(a.target));
  for (uint32_t g : groups) {
    std::unique_ptr<GroupCopy> copy;
    s = GroupCopy::Open(a.target + "/g" + std::to_string(g), &copy);
    if (!s.ok()) return Fail(s);
    LogSummary sum;
    s = Summarize(copy->db(), &sum);
    if (!s.ok()) return Fail(s);
    const CheckpointInfo c = FindCheckpoint(cdir + "/g" + std::to_string(g));
    out->Group(g, sum, c.found, c.newest.instance, c.newest.chain_checksum,
               c.newest.total_bytes(), c.count);
  }
  out->End();
  return 0;
}

int Verify(const Args& a, Output* out) {
  std::vector<uint32_t> groups;
  Status s = Groups(a, &groups);
  if (s.ok()) s = CheckNotLive(a.target, groups);
  if (!s.ok()) return Fail(s);
  bool all_ok = true;
  out->BeginVerify(a.target);
  for (uint32_t g : groups) {
    std::unique_ptr<GroupCopy> copy;
    s = GroupCopy::Open(a.target + "/g" + std::to_string(g), &copy);
    if (!s.ok()) return Fail(s);
    VerifyResult r;
    s = Verify(copy->db(), &r);
    if (!s.ok()) return Fail(s);
    all_ok = all_ok && r.ok;
    out->Verified(g, r);
  }
  out->End();
  return all_ok ? 0 : 1;
}

int Dump(const Args& a, Output* out) {
  if (!a.Has("group")) return Fail(Status::InvalidArgument("dump needs --group=G"));
  const uint32_t g = static_cast<uint32_t>(std::strtoul(a.Get("group").c_str(), nullptr, 10));
  const std::string dir = a.target + "/g" + std::to_string(g);
  std::unique_ptr<GroupCopy> copy;
  Status s = GroupCopy::Open(dir, &copy);
  if (!s.ok()) return Fail(s);
  std::vector<DumpedRecord> records;
  s = Dump(copy->db(), std::strtoull(a.Get("from", "0").c_str(), nullptr, 10),
           std::strtoull(a.Get("to", "18446744073709551615").c_str(), nullptr, 10),
           std::strtoul(a.Get("limit", "1000").c_str(), nullptr, 10), &records);
  if (!s.ok()) return Fail(s);
  out->Dumped(g, records, a.Has("hex"));
  return 0;
}

int Live(const Args& a, Output* out) {
  std::vector<std::string> endpoints;
  size_t start = 0;
  while (start <= a.target.size()) {
    const size_t comma = a.target.find(',', start);
    const std::string e = a.target.substr(start, comma == std::string::npos ? comma : comma - start);
    if (!e.empty()) endpoints.push_back(e);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<LiveGroup> groups;
  std::vector<std::string> raw, errors;
  QueryLive(endpoints, &groups, &raw, &errors);
  out->Live(groups, errors);
  return raw.empty() ? 1 : 0;
}

}  // namespace
}  // namespace admin
}  // namespace chorus

int main(int argc, char** argv) {
  using namespace chorus::admin;
  Args a;
  if (!Parse(argc, argv, &a) || a.Has("help")) {
    std::fputs(kUsage, a.Has("help") ? stdout : stderr);
    return a.Has("help") ? 0 : 2;
  }
  Output out(a.Has("json"));
  if (a.Has("nodes")) {
    std::vector<chorus::NodeInfo> nodes;
    const chorus::Status s = chorus::NodeInfo::ParseList(a.Get("nodes"), &nodes);
    if (!s.ok()) {
      std::fprintf(stderr, "chorus_admin: --nodes: %s\n", s.ToString().c_str());
      return 2;
    }
    std::vector<std::string> genesis;
    for (const chorus::NodeInfo& n : nodes) {
      genesis.push_back(MemberText({n.id(), true, n.ToString(), 0}));
    }
    out.set_genesis(genesis);
  }
  if (a.command == "inspect") return Inspect(a, &out);
  if (a.command == "verify") return Verify(a, &out);
  if (a.command == "dump") return Dump(a, &out);
  if (a.command == "live") return Live(a, &out);
  std::fputs(kUsage, stderr);
  return 2;
}
