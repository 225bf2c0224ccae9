#include "node/data_dir_identity.h"

#include <stdio.h>

#include <chrono>
#include <random>
#include <sstream>
#include <vector>

#include "node/fs_util.h"
#include "utils/crc32c.h"

namespace chorus {

const char kIdentityFileName[] = "IDENTITY";

namespace {

constexpr char kHeader[] = "chorus-identity 1";

bool ParseDecimal(const std::string& text, uint64_t* v) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t out = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (out > (UINT64_MAX - digit) / 10) return false;
    out = out * 10 + digit;
  }
  *v = out;
  return true;
}

// A random non-zero number: std::random_device (the OS), mixed with the
// clock in case the device is a deterministic fallback.
uint64_t DrawIncarnation() {
  std::random_device rd;
  const uint64_t t = static_cast<uint64_t>(
      std::chrono::high_resolution_clock::now().time_since_epoch().count());
  uint64_t x = 0;
  while (x == 0) {
    x = (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd()) ^ (t * 0x9e3779b97f4a7c15ull);
  }
  return x;
}

Status WriteIdentity(const std::string& dir, const DataDirIdentity& id) {
  const std::string path = dir + "/" + kIdentityFileName;
  const std::string tmp = path + ".tmp";
  Status s = WriteWholeFile(tmp, id.Encode());
  if (!s.ok()) return s;
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::FromErrno("cannot rename '" + tmp + "' to '" + path + "'", errno);
  }
  return SyncPath(dir);  // the rename itself must survive a crash
}

}  // namespace

std::string DataDirIdentity::Encode() const {
  std::string body = std::string(kHeader) + "\n";
  body += "cluster_id " + std::to_string(cluster_id) + "\n";
  body += "node_id " + std::to_string(node_id) + "\n";
  body += "incarnation " + std::to_string(incarnation) + "\n";
  body += std::string("joined ") + (joined ? "1" : "0") + "\n";
  body += "address " + address + "\n";
  return body + "crc32c " + std::to_string(crc32c::Value(body)) + "\n";
}

Status DataDirIdentity::Decode(const std::string& text, DataDirIdentity* out) {
  const size_t crc_at = text.rfind("crc32c ");
  if (crc_at == std::string::npos || (crc_at > 0 && text[crc_at - 1] != '\n')) {
    return Status::Corruption("identity file: no crc32c line");
  }
  const std::string body = text.substr(0, crc_at);
  std::string crc_text = text.substr(crc_at + 7);
  while (!crc_text.empty() && crc_text.back() == '\n') crc_text.pop_back();
  uint64_t crc = 0;
  if (!ParseDecimal(crc_text, &crc) || crc != crc32c::Value(body)) {
    return Status::Corruption("identity file: checksum mismatch");
  }
  std::istringstream in(body);
  std::string line;
  if (!std::getline(in, line) || line != kHeader) {
    return Status::Corruption("identity file: not a chorus identity (first line '" + line + "')");
  }
  DataDirIdentity id;
  int seen = 0;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    if (space != std::string::npos && line.compare(0, space, "address") == 0) {
      id.address = line.substr(space + 1);
      continue;
    }
    uint64_t v = 0;
    if (space == std::string::npos || !ParseDecimal(line.substr(space + 1), &v)) {
      return Status::Corruption("identity file: bad line '" + line + "'");
    }
    const std::string key = line.substr(0, space);
    if (key == "cluster_id") {
      id.cluster_id = v;
    } else if (key == "node_id") {
      id.node_id = v;
    } else if (key == "incarnation") {
      id.incarnation = v;
    } else if (key == "joined" && v <= 1) {
      id.joined = v == 1;
    } else {
      return Status::Corruption("identity file: bad line '" + line + "'");
    }
    ++seen;
  }
  if (seen != 4 || id.node_id == 0 || id.incarnation == 0) {
    return Status::Corruption("identity file: missing or zero fields");
  }
  *out = id;
  return Status::OK();
}

Status LoadOrCreateIdentity(const Options& options, Logger* logger, DataDirIdentity* identity) {
  DataDirIdentity id;
  id.cluster_id = options.cluster_id;
  id.node_id = options.self.id();
  id.joined = !options.join.empty();
  id.address = options.self.ToString();
  if (options.data_dir.empty()) {
    *identity = id;  // nowhere to record one: the factory's logs decide
    return Status::OK();
  }
  const std::string& dir = options.data_dir;
  const std::string path = dir + "/" + kIdentityFileName;
  if (PathExists(path)) {
    std::string text;
    Status s = ReadWholeFile(path, &text);
    if (!s.ok()) return s;
    DataDirIdentity stored;
    s = DataDirIdentity::Decode(text, &stored);
    if (!s.ok()) return s.Annotate("'" + path + "'");
    if (stored.cluster_id != id.cluster_id || stored.node_id != id.node_id) {
      return Status::InvalidArgument(
          "data dir '" + dir + "' belongs to cluster " + std::to_string(stored.cluster_id) +
          " node " + std::to_string(stored.node_id) + " (" + stored.address +
          "), not to cluster " + std::to_string(id.cluster_id) + " node " +
          std::to_string(id.node_id) + " (" + id.address + "; Options::cluster_id, Options::self)");
    }
    *identity = stored;
    return Status::OK();
  }
  std::vector<std::string> names;
  const bool exists = PathExists(dir);
  if (exists) {
    Status s = ListDir(dir, &names);
    if (!s.ok()) return s;
  }
  // A data dir holds this node's state when a group log is in it
  // (data_dir/g<N>/CURRENT, leveldb's). Anything else in it is not chorus's
  // (an application may keep its own files there) and makes it no older
  // data dir.
  bool holds_data = false;
  for (const std::string& n : names) {
    const bool group_dir = n.size() > 1 && n[0] == 'g' &&
                           n.find_first_not_of("0123456789", 1) == std::string::npos;
    holds_data = holds_data || (group_dir && PathExists(dir + "/" + n + "/CURRENT"));
  }
  if (holds_data) {
    // A data dir of a chorus that recorded no identity: its logs are this
    // node's (each log's meta says so), and it was not created to join.
    id.joined = false;
    CHORUS_LOG(logger, kInfo, "data dir '%s' has no %s (an older data dir): recording one",
               dir.c_str(), kIdentityFileName);
  } else if (!options.create_if_missing && !options.log_storage_factory) {
    // (With a factory, the factory decides where the logs are and whether
    // they may be created: create_if_missing is its business.)
    return Status::InvalidArgument("data_dir '" + dir +
                                   "' holds no chorus log and create_if_missing is false");
  } else {
    Status s = CreateDirs(dir);
    if (!s.ok()) return s;
  }
  id.incarnation = DrawIncarnation();
  Status s = WriteIdentity(dir, id);
  if (!s.ok()) return s.Annotate("recording the data dir's identity");
  *identity = id;
  return Status::OK();
}

}  // namespace chorus
