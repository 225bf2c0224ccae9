// CRC-32C (Castagnoli), the checksum of chorus's frames and log records.
#ifndef CHORUS_UTILS_CRC32C_H_
#define CHORUS_UTILS_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace chorus {
namespace crc32c {

// Returns the crc32c of data[0, n) continued from `init_crc` (the crc of
// the bytes before them; 0 for a fresh start). Extend(Extend(0, a), b) equals
// Value(a + b).
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);

inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(const std::string& s) { return Extend(0, s.data(), s.size()); }

}  // namespace crc32c
}  // namespace chorus

#endif  // CHORUS_UTILS_CRC32C_H_
