// A small JSON reader for chorus_admin's live mode (the /status documents
// of node/prometheus/status_json.cc): objects, arrays, strings (with the
// common escapes; \u00XX kept as the byte), numbers (kept as their text,
// so 64-bit ids stay exact), true, false, null.
#ifndef CHORUS_TOOLS_ADMIN_JSON_H_
#define CHORUS_TOOLS_ADMIN_JSON_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace admin {

struct Json {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = kNull;
  bool boolean = false;
  std::string text;  // kString: the string; kNumber: the number as written
  std::vector<Json> items;                            // kArray
  std::vector<std::pair<std::string, Json>> members;  // kObject, in order

  // The member `key` of an object; a null Json when absent (or not an object).
  const Json& operator[](const std::string& key) const;
  bool is_null() const { return type == kNull; }
  // A number's value (0 when not a non-negative integer); a string's text
  // ("" otherwise); a bool (false otherwise).
  uint64_t u64() const;
  const std::string& str() const;
  bool truth() const { return type == kBool && boolean; }
};

// Parses `text` (one document; trailing white space allowed). Corruption
// naming the offset of the problem otherwise.
Status ParseJson(const std::string& text, Json* out);

}  // namespace admin
}  // namespace chorus

#endif  // CHORUS_TOOLS_ADMIN_JSON_H_
