#include "tools/admin/json.h"

#include <cctype>
#include <cstdlib>

namespace chorus {
namespace admin {

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(const std::string& t) : t_(t) {}

  Status Document(Json* out) {
    Status s = Value(out, 0);
    if (!s.ok()) return s;
    Space();
    return p_ == t_.size() ? Status::OK() : Error("trailing bytes");
  }

 private:
  Status Error(const std::string& what) const {
    return Status::Corruption("JSON: " + what + " at offset " + std::to_string(p_));
  }
  void Space() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  bool Literal(const char* word) {
    const std::string w(word);
    if (t_.compare(p_, w.size(), w) != 0) return false;
    p_ += w.size();
    return true;
  }

  Status Value(Json* out, int depth) {
    if (depth > kMaxDepth) return Error("nested too deeply");
    Space();
    if (p_ >= t_.size()) return Error("unexpected end");
    const char c = t_[p_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out->type = Json::kString;
      return String(&out->text);
    }
    if (Literal("true") || Literal("false")) {
      out->type = Json::kBool;
      out->boolean = c == 't';
      return Status::OK();
    }
    if (Literal("null")) {
      out->type = Json::kNull;
      return Status::OK();
    }
    const size_t start = p_;
    while (p_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[p_])) || t_[p_] == '-' ||
                              t_[p_] == '+' || t_[p_] == '.' || t_[p_] == 'e' || t_[p_] == 'E')) {
      ++p_;
    }
    if (p_ == start) return Error("unexpected character");
    out->type = Json::kNumber;
    out->text = t_.substr(start, p_ - start);
    return Status::OK();
  }

  Status String(std::string* out) {
    ++p_;  // the opening quote
    while (p_ < t_.size() && t_[p_] != '"') {
      char c = t_[p_++];
      if (c == '\\') {
        if (p_ >= t_.size()) break;
        const char e = t_[p_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u':
            if (p_ + 4 > t_.size()) return Error("short \\u escape");
            c = static_cast<char>(std::strtoul(t_.substr(p_, 4).c_str(), nullptr, 16) & 0xFF);
            p_ += 4;
            break;
          default: c = e;  // \" \\ \/
        }
      }
      out->push_back(c);
    }
    if (p_ >= t_.size()) return Error("unterminated string");
    ++p_;
    return Status::OK();
  }

  Status Array(Json* out, int depth) {
    out->type = Json::kArray;
    ++p_;
    Space();
    if (p_ < t_.size() && t_[p_] == ']') return ++p_, Status::OK();
    while (true) {
      out->items.emplace_back();
      Status s = Value(&out->items.back(), depth + 1);
      if (!s.ok()) return s;
      Space();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == ']') return ++p_, Status::OK();
      return Error("expected , or ]");
    }
  }

  Status Object(Json* out, int depth) {
    out->type = Json::kObject;
    ++p_;
    Space();
    if (p_ < t_.size() && t_[p_] == '}') return ++p_, Status::OK();
    while (true) {
      Space();
      if (p_ >= t_.size() || t_[p_] != '"') return Error("expected a member name");
      std::string key;
      Status s = String(&key);
      if (!s.ok()) return s;
      Space();
      if (p_ >= t_.size() || t_[p_] != ':') return Error("expected :");
      ++p_;
      out->members.emplace_back(std::move(key), Json());
      s = Value(&out->members.back().second, depth + 1);
      if (!s.ok()) return s;
      Space();
      if (p_ < t_.size() && t_[p_] == ',') {
        ++p_;
        continue;
      }
      if (p_ < t_.size() && t_[p_] == '}') return ++p_, Status::OK();
      return Error("expected , or }");
    }
  }

  const std::string& t_;
  size_t p_ = 0;
};

}  // namespace

const Json& Json::operator[](const std::string& key) const {
  static const Json* const kNullJson = new Json();
  if (type != kObject) return *kNullJson;
  for (const auto& m : members) {
    if (m.first == key) return m.second;
  }
  return *kNullJson;
}

uint64_t Json::u64() const {
  if (type != kNumber || text.empty()) return 0;
  if (text.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::strtoull(text.c_str(), nullptr, 10);
}

const std::string& Json::str() const {
  static const std::string* const kEmpty = new std::string();
  return type == kString ? text : *kEmpty;
}

Status ParseJson(const std::string& text, Json* out) {
  *out = Json();
  return Parser(text).Document(out);
}

}  // namespace admin
}  // namespace chorus
