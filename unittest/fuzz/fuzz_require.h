// The one assertion of the fuzz targets: a broken property traps, which
// libFuzzer reports as a crash and keeps the input that did it.
#ifndef CHORUS_UNITTEST_FUZZ_FUZZ_REQUIRE_H_
#define CHORUS_UNITTEST_FUZZ_FUZZ_REQUIRE_H_

namespace chorus {
namespace fuzz {

inline void Require(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace fuzz
}  // namespace chorus

#endif  // CHORUS_UNITTEST_FUZZ_FUZZ_REQUIRE_H_
