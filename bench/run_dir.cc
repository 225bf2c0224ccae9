#include "bench/run_dir.h"

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace chorus {
namespace bench {

bool WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !ok) return false;
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool ReadFile(const std::string& path, std::string* text) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  text->clear();
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text->append(buf, n);
  std::fclose(f);
  return true;
}

bool ReadWindow(const std::string& dir, int64_t* start_ns, int64_t* end_ns) {
  std::string text;
  long long start = 0, end = 0;
  if (!ReadFile(dir + "/start", &text) ||
      std::sscanf(text.c_str(), "%lld %lld", &start, &end) != 2) {
    return false;
  }
  *start_ns = start;
  *end_ns = end;
  return true;
}

bool WriteWindow(const std::string& dir, int64_t start_ns, int64_t end_ns) {
  return WriteFileAtomically(dir + "/start",
                             std::to_string(start_ns) + " " + std::to_string(end_ns) + "\n");
}

std::string EncodeResults(const std::vector<ClientResult>& results) {
  std::map<std::string, uint64_t> failures;
  for (const ClientResult& r : results) {
    for (const auto& [code, n] : r.failures) failures[code] += n;
  }
  std::string text = "failures";
  for (const auto& [code, n] : failures) text += " " + code + ":" + std::to_string(n);
  text += "\n";
  for (const ClientResult& r : results) {
    for (uint32_t us : r.latencies_us) text += std::to_string(us) + "\n";
  }
  return text;
}

bool DecodeResults(const std::string& text, ClientResult* out) {
  const size_t nl = text.find('\n');
  if (text.compare(0, 8, "failures") != 0 || nl == std::string::npos) return false;
  size_t pos = 8;
  while (pos < nl) {
    const size_t colon = text.find(':', pos);
    size_t next = text.find(' ', pos + 1);
    if (next == std::string::npos || next > nl) next = nl;
    if (colon == std::string::npos || colon > next) return false;
    out->failures[text.substr(pos + 1, colon - pos - 1)] +=
        std::strtoull(text.c_str() + colon + 1, nullptr, 10);
    pos = next;
  }
  for (pos = nl + 1; pos < text.size();) {
    char* end = nullptr;
    const unsigned long us = std::strtoul(text.c_str() + pos, &end, 10);
    if (end == text.c_str() + pos) break;
    out->latencies_us.push_back(static_cast<uint32_t>(us));
    pos = static_cast<size_t>(end - text.c_str()) + 1;
  }
  return true;
}

Status WaitForResults(const std::string& dir, const std::string& name,
                      std::chrono::steady_clock::time_point deadline, ClientResult* out) {
  const std::string path = dir + "/" + name;
  std::string text;
  while (!ReadFile(path, &text)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Timeout("no " + path + " in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!DecodeResults(text, out)) return Status::Corruption("bad results file " + path);
  return Status::OK();
}

}  // namespace bench
}  // namespace chorus
