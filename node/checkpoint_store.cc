// PROVISIONAL (lane B2): replaced by lane B1's store on merge.
#include "node/checkpoint_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {

namespace fs = std::filesystem;

uint64_t CheckpointManifest::total_bytes() const {
  uint64_t n = 0;
  for (const auto& f : files) n += f.size;
  return n;
}

std::string CheckpointManifest::Encode() const {
  std::string out;
  PutFixed64(&out, cluster_id);
  PutFixed32(&out, group);
  PutFixed64(&out, instance);
  PutFixed32(&out, chain_checksum);
  PutFixed32(&out, static_cast<uint32_t>(files.size()));
  for (const auto& f : files) {
    PutFixed32(&out, static_cast<uint32_t>(f.path.size()));
    out.append(f.path);
    PutFixed64(&out, f.size);
    PutFixed32(&out, f.crc);
  }
  PutFixed32(&out, crc32c::Value(out));
  return out;
}

Status CheckpointManifest::Decode(const std::string& bytes, CheckpointManifest* m) {
  if (bytes.size() < 32) return Status::Corruption("manifest: short");
  const size_t body = bytes.size() - 4;
  if (crc32c::Value(bytes.data(), body) != DecodeFixed32(bytes.data() + body)) {
    return Status::Corruption("manifest: bad crc");
  }
  CheckpointManifest r;
  const char* p = bytes.data();
  size_t at = 0;
  auto need = [&](size_t n) { return at + n <= body; };
  r.cluster_id = DecodeFixed64(p);
  r.group = DecodeFixed32(p + 8);
  r.instance = DecodeFixed64(p + 12);
  r.chain_checksum = DecodeFixed32(p + 20);
  const uint32_t count = DecodeFixed32(p + 24);
  at = 28;
  for (uint32_t i = 0; i < count; ++i) {
    if (!need(4)) return Status::Corruption("manifest: truncated");
    const uint32_t len = DecodeFixed32(p + at);
    at += 4;
    if (!need(static_cast<size_t>(len) + 12)) return Status::Corruption("manifest: truncated");
    CheckpointFile f;
    f.path.assign(p + at, len);
    at += len;
    f.size = DecodeFixed64(p + at);
    f.crc = DecodeFixed32(p + at + 8);
    at += 12;
    r.files.push_back(std::move(f));
  }
  if (at != body) return Status::Corruption("manifest: trailing bytes");
  *m = std::move(r);
  return Status::OK();
}

namespace {

Status ReadWhole(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot read " + path);
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return Status::OK();
}

Status FileCrc(const std::string& path, uint64_t* size, uint32_t* crc) {
  std::string bytes;
  Status s = ReadWhole(path, &bytes);
  if (!s.ok()) return s;
  *size = bytes.size();
  *crc = crc32c::Value(bytes);
  return Status::OK();
}

}  // namespace

Status RemoveTree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  return ec ? Status::IOError("remove " + path + ": " + ec.message()) : Status::OK();
}

Status CheckpointStore::Open(const std::string& dir, uint64_t cluster_id, uint32_t group,
                             Logger* /*logger*/, std::unique_ptr<CheckpointStore>* store) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError("create " + dir + ": " + ec.message());
  std::unique_ptr<CheckpointStore> s(new CheckpointStore(dir, cluster_id, group));
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("staging-", 0) == 0) {
      RemoveTree(e.path().string());
      continue;
    }
    std::string bytes;
    CheckpointManifest m;
    if (ReadWhole(e.path().string() + "/MANIFEST", &bytes).ok() &&
        CheckpointManifest::Decode(bytes, &m).ok()) {
      s->committed_[m.instance] = m;
    }
  }
  *store = std::move(s);
  return Status::OK();
}

Status CheckpointStore::Newest(CheckpointManifest* m) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (committed_.empty()) return Status::NotFound("no checkpoint");
  *m = committed_.rbegin()->second;
  return Status::OK();
}

std::string CheckpointStore::DirOf(uint64_t instance) const {
  return dir_ + "/" + std::to_string(instance);
}

Status CheckpointStore::BeginStaging(std::string* staging_dir) {
  uint64_t tag = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tag = ++next_tag_;
  }
  *staging_dir = dir_ + "/staging-" + std::to_string(tag) + "-" + std::to_string(getpid());
  std::error_code ec;
  fs::create_directories(*staging_dir, ec);
  return ec ? Status::IOError("create " + *staging_dir) : Status::OK();
}

Status CheckpointStore::Commit(const std::string& staging_dir, CheckpointManifest* m) {
  std::vector<CheckpointFile> found;
  for (const auto& e : fs::recursive_directory_iterator(staging_dir)) {
    if (!e.is_regular_file()) continue;
    CheckpointFile f;
    f.path = fs::relative(e.path(), staging_dir).string();
    Status s = FileCrc(e.path().string(), &f.size, &f.crc);
    if (!s.ok()) return s;
    found.push_back(std::move(f));
  }
  std::sort(found.begin(), found.end(),
            [](const CheckpointFile& a, const CheckpointFile& b) { return a.path < b.path; });
  if (!m->files.empty()) {
    if (found.size() != m->files.size()) return Status::Corruption("file count mismatch");
    for (size_t i = 0; i < found.size(); ++i) {
      if (found[i].path != m->files[i].path || found[i].size != m->files[i].size ||
          found[i].crc != m->files[i].crc) {
        return Status::Corruption("file " + m->files[i].path + " mismatches its manifest");
      }
    }
  }
  m->files = found;
  m->cluster_id = cluster_id_;
  m->group = group_;
  {
    std::ofstream out(staging_dir + "/MANIFEST", std::ios::binary | std::ios::trunc);
    out << m->Encode();
    if (!out) return Status::IOError("write manifest");
  }
  const std::string target = DirOf(m->instance);
  std::error_code ec;
  fs::remove_all(target, ec);
  fs::rename(staging_dir, target, ec);
  if (ec) return Status::IOError("rename " + staging_dir + ": " + ec.message());
  std::lock_guard<std::mutex> lock(mu_);
  committed_[m->instance] = *m;
  for (auto it = committed_.begin(); it != committed_.end();) {
    if (it->first < m->instance && pins_[it->first] == 0) {
      RemoveTree(DirOf(it->first));
      it = committed_.erase(it);
    } else {
      ++it;
    }
  }
  return Status::OK();
}

void CheckpointStore::Abort(const std::string& staging_dir) { RemoveTree(staging_dir); }

Status CheckpointStore::Pin(uint64_t instance) {
  std::lock_guard<std::mutex> lock(mu_);
  if (committed_.count(instance) == 0) return Status::NotFound("no checkpoint to pin");
  ++pins_[instance];
  return Status::OK();
}

void CheckpointStore::Unpin(uint64_t instance) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pins_[instance] > 0) --pins_[instance];
}

Status CheckpointStore::ReadChunk(const CheckpointManifest& m, uint64_t offset, size_t max_bytes,
                                  std::string* data) const {
  data->clear();
  uint64_t start = 0;
  for (const auto& f : m.files) {
    if (data->size() >= max_bytes) break;
    const uint64_t end = start + f.size;
    if (offset < end) {
      const uint64_t from = std::max(offset, start) - start;
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(f.size - from, max_bytes - data->size()));
      const std::string path = DirOf(m.instance) + "/" + f.path;
      int fd = open(path.c_str(), O_RDONLY);
      if (fd < 0) return Status::IOError("open " + path);
      std::string buf(n, '\0');
      const ssize_t got = pread(fd, &buf[0], n, static_cast<off_t>(from));
      close(fd);
      if (got != static_cast<ssize_t>(n)) return Status::IOError("short read " + path);
      data->append(buf);
      offset += n;
    }
    start = end;
  }
  return Status::OK();
}

Status CheckpointStore::MakeScratch(const CheckpointManifest& m, int state_machine_id,
                                    std::string* scratch) {
  Status s = BeginStaging(scratch);
  if (!s.ok()) return s;
  const std::string from = DirOf(m.instance) + "/sm" + std::to_string(state_machine_id);
  std::error_code ec;
  if (fs::exists(from)) fs::copy(from, *scratch, fs::copy_options::recursive, ec);
  return ec ? Status::IOError("scratch: " + ec.message()) : Status::OK();
}

}  // namespace chorus
