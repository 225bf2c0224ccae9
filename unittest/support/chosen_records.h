// Writes a chosen history straight into a LogStorage, as a core would have
// left it: chosen records with their chained checksums.
#ifndef CHORUS_UNITTEST_SUPPORT_CHOSEN_RECORDS_H_
#define CHORUS_UNITTEST_SUPPORT_CHOSEN_RECORDS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/log_storage.h"
#include "paxos.pb.h"
#include "paxos/ballot.h"
#include "utils/crc32c.h"

namespace chorus {
namespace testing {

// The record of an instance chosen with `value` and chained `checksum`.
inline std::string ChosenRecord(const std::string& value, uint32_t checksum) {
  paxos::InstanceRecord rec;
  paxos::Ballot(1, 1).ToPb(rec.mutable_accepted_ballot());
  rec.set_value(value);
  rec.set_chosen(true);
  rec.set_checksum(checksum);
  return rec.SerializeAsString();
}

// Writes instances [from, to) as chosen with value(i), chained from `seed`
// (the checksum before `from`), in one synced batch. Returns each
// instance's checksum, in order.
inline std::vector<uint32_t> WriteChosenRecords(LogStorage* log, uint64_t from, uint64_t to,
                                                const std::function<std::string(uint64_t)>& value,
                                                uint32_t seed = 0) {
  std::vector<uint32_t> sums;
  LogWriteBatch batch;
  uint32_t c = seed;
  for (uint64_t i = from; i < to; ++i) {
    const std::string v = value(i);
    c = crc32c::Extend(c, v.data(), v.size());
    sums.push_back(c);
    batch.records.emplace_back(i, ChosenRecord(v, c));
  }
  EXPECT_TRUE(log->Write(batch, true).ok());
  return sums;
}

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SUPPORT_CHOSEN_RECORDS_H_
