// FieldReader: reads the fixed-width little-endian fields (utils/coding.h)
// and length-prefixed strings of an untrusted frame, in order.
#ifndef CHORUS_UTILS_FIELD_READER_H_
#define CHORUS_UTILS_FIELD_READER_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "utils/coding.h"

namespace chorus {

// Appends `s` as a u32 length then its bytes (FieldReader::GetString reads it).
inline void PutLengthPrefixed(std::string* dst, const std::string& s) {
  PutFixed32(dst, static_cast<uint32_t>(s.size()));
  dst->append(s);
}

// Every Get fails once the frame is too short (and nothing is read past its
// end), so a caller may check the results once, after the last field. The
// frame must outlive the reader. Not thread-safe (one reader, one thread).
class FieldReader {
 public:
  FieldReader(const char* p, size_t n) : p_(p), left_(n) {}

  bool Get8(uint8_t* v) {
    if (left_ < 1) return false;
    *v = static_cast<uint8_t>(*p_);
    Skip(1);
    return true;
  }
  bool Get32(uint32_t* v) {
    if (left_ < 4) return false;
    *v = DecodeFixed32(p_);
    Skip(4);
    return true;
  }
  bool Get64(uint64_t* v) {
    if (left_ < 8) return false;
    *v = DecodeFixed64(p_);
    Skip(8);
    return true;
  }
  // A u32 length then that many bytes. Fails when the length exceeds `max`
  // (before anything is copied: the length is untrusted; too_long() then
  // says so) or what is left of the frame.
  bool GetString(size_t max, std::string* s) {
    uint32_t len = 0;
    if (!Get32(&len)) return false;
    if (len > max) {
      too_long_ = true;
      return false;
    }
    if (left_ < len) return false;
    s->assign(p_, len);
    Skip(len);
    return true;
  }

  // Bytes not read yet.
  size_t left() const { return left_; }
  // Whether a GetString failed on its bound rather than on the frame's end.
  bool too_long() const { return too_long_; }

 private:
  void Skip(size_t n) {
    p_ += n;
    left_ -= n;
  }

  const char* p_;
  size_t left_;
  bool too_long_ = false;
};

}  // namespace chorus

#endif  // CHORUS_UTILS_FIELD_READER_H_
