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

namespace internal {
// The two implementations Extend picks between, for tests and benches: the
// portable table-driven one, and the x86 SSE4.2 crc32 instruction (the same
// polynomial). Extend uses the hardware one when the CPU has it.
uint32_t ExtendPortable(uint32_t init_crc, const char* data, size_t n);
// REQUIRES: HardwareAvailable().
uint32_t ExtendHardware(uint32_t init_crc, const char* data, size_t n);
bool HardwareAvailable();
}  // namespace internal

}  // namespace crc32c
}  // namespace chorus

#endif  // CHORUS_UTILS_CRC32C_H_
