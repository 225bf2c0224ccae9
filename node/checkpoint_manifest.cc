// CheckpointManifest: encoding and checks (see checkpoint_store.h).
#include "node/checkpoint_store.h"

#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {

namespace {

constexpr uint32_t kManifestMagic = 0x314b4843;  // "CHK1" little-endian: no membership
// "CHK2": the files are followed by u32 length + the encoded membership.
constexpr uint32_t kManifestMagicMembership = 0x324b4843;
constexpr uint32_t kMaxMembershipBytes = 1u << 20;
// Bound on a path in an untrusted manifest (and kMaxCheckpointFiles on their
// count): it is held in memory whole.
constexpr uint32_t kMaxPathBytes = 4096;

// "sm<positive id>", the first component of every checkpoint file.
bool IsStateMachineDir(const std::string& name) {
  if (name.size() < 3 || name.compare(0, 2, "sm") != 0 || name[2] == '0') return false;
  if (name.size() > 12) return false;
  for (size_t i = 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

}  // namespace

bool IsCleanCheckpointPath(const std::string& path) {
  if (path.empty() || path.size() > kMaxPathBytes || path[0] == '/') return false;
  if (path.find('\0') != std::string::npos) return false;
  size_t pos = 0;
  bool first = true;
  int components = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    const std::string part = path.substr(pos, slash - pos);
    if (part.empty() || part == "." || part == "..") return false;
    if (first && !IsStateMachineDir(part)) return false;
    first = false;
    ++components;
    pos = slash + 1;
  }
  return components >= 2;  // a file inside sm<id>/, never sm<id> itself
}

std::string StateMachineDirName(int id) { return "sm" + std::to_string(id); }

uint64_t CheckpointManifest::total_bytes() const {
  uint64_t total = 0;
  for (const CheckpointFile& f : files) total += f.size;
  return total;
}

std::string CheckpointManifest::Encode() const {
  std::string out;
  PutFixed32(&out, membership.empty() ? kManifestMagic : kManifestMagicMembership);
  PutFixed64(&out, cluster_id);
  PutFixed32(&out, group);
  PutFixed64(&out, instance);
  PutFixed32(&out, chain_checksum);
  PutFixed32(&out, static_cast<uint32_t>(files.size()));
  for (const CheckpointFile& f : files) {
    PutFixed32(&out, static_cast<uint32_t>(f.path.size()));
    out.append(f.path);
    PutFixed64(&out, f.size);
    PutFixed32(&out, f.crc);
  }
  if (!membership.empty()) {
    PutFixed32(&out, static_cast<uint32_t>(membership.size()));
    out.append(membership);
  }
  PutFixed32(&out, crc32c::Value(out));
  return out;
}

Status CheckpointManifest::Decode(const std::string& bytes, CheckpointManifest* m) {
  constexpr size_t kHeader = 4 + 8 + 4 + 8 + 4 + 4;
  if (bytes.size() < kHeader + 4) return Status::Corruption("checkpoint manifest: truncated");
  const size_t body = bytes.size() - 4;
  if (crc32c::Value(bytes.data(), body) != DecodeFixed32(bytes.data() + body)) {
    return Status::Corruption("checkpoint manifest: checksum mismatch");
  }
  const char* p = bytes.data();
  const uint32_t magic = DecodeFixed32(p);
  if (magic != kManifestMagic && magic != kManifestMagicMembership) {
    return Status::Corruption("checkpoint manifest: bad magic");
  }
  CheckpointManifest out;
  out.cluster_id = DecodeFixed64(p + 4);
  out.group = DecodeFixed32(p + 12);
  out.instance = DecodeFixed64(p + 16);
  out.chain_checksum = DecodeFixed32(p + 24);
  const uint32_t count = DecodeFixed32(p + 28);
  if (count > kMaxCheckpointFiles) {
    return Status::Corruption("checkpoint manifest: " + std::to_string(count) + " files (max " +
                              std::to_string(kMaxCheckpointFiles) + ")");
  }
  size_t pos = kHeader;
  for (uint32_t i = 0; i < count; ++i) {
    if (body - pos < 4) return Status::Corruption("checkpoint manifest: truncated file entry");
    const uint32_t len = DecodeFixed32(p + pos);
    pos += 4;
    if (len > kMaxPathBytes || body - pos < len + 12u) {
      return Status::Corruption("checkpoint manifest: truncated or oversized path");
    }
    CheckpointFile f;
    f.path.assign(p + pos, len);
    pos += len;
    f.size = DecodeFixed64(p + pos);
    f.crc = DecodeFixed32(p + pos + 8);
    pos += 12;
    if (!IsCleanCheckpointPath(f.path)) {
      return Status::Corruption("checkpoint manifest: bad file path '" + f.path + "'");
    }
    if (!out.files.empty() && !(out.files.back().path < f.path)) {
      return Status::Corruption("checkpoint manifest: files not sorted by unique path at '" +
                                f.path + "'");
    }
    out.files.push_back(std::move(f));
  }
  if (magic == kManifestMagicMembership) {
    if (body - pos < 4) return Status::Corruption("checkpoint manifest: truncated membership");
    const uint32_t len = DecodeFixed32(p + pos);
    pos += 4;
    if (len == 0 || len > kMaxMembershipBytes || body - pos < len) {
      return Status::Corruption("checkpoint manifest: bad membership length");
    }
    out.membership.assign(p + pos, len);
    pos += len;
  }
  if (pos != body) return Status::Corruption("checkpoint manifest: trailing bytes");
  *m = std::move(out);
  return Status::OK();
}

}  // namespace chorus
