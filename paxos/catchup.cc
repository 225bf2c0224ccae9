#include "paxos/catchup.h"

#include "paxos.pb.h"
#include "paxos/trim.h"
#include "utils/crc32c.h"

namespace chorus {
namespace paxos {

Status ReadCatchup(const CatchupRead& read, LogStorage* log, CatchupReply* reply) {
  *reply = CatchupReply();
  reply->end = read.first;
  PaxosMsg msg;
  msg.set_type(LEARN_VALUES);
  msg.set_instance(read.first);
  Status stop;
  size_t bytes = 0;
  uint32_t previous = 0;
  for (uint64_t i = read.first; i < read.chosen_end; ++i) {
    if (static_cast<size_t>(msg.learned_size()) >= read.max_count) break;
    if (msg.learned_size() > 0 && bytes >= read.max_bytes) break;
    std::string record;
    Status s = log->Get(i, &record);
    if (s.IsNotFound()) {
      stop = Status::NotFound("catch-up: no record at instance " + std::to_string(i) +
                              " (trimmed)");
      break;
    }
    InstanceRecord rec;
    if (!s.ok() || !rec.ParseFromString(record) || !rec.chosen()) {
      stop = Status::Corruption("catch-up: bad chosen record at instance " + std::to_string(i) +
                                (s.ok() ? std::string() : ": " + s.ToString()));
      break;
    }
    // The asker checks the chain too (and halts on a break, blaming a
    // divergence); a break inside the batch is this log's own damage.
    if (msg.learned_size() > 0 &&
        crc32c::Extend(previous, rec.value().data(), rec.value().size()) != rec.checksum()) {
      stop = Status::Corruption("catch-up: chained checksum mismatch at instance " +
                                std::to_string(i) + " in this node's log");
      break;
    }
    previous = rec.checksum();
    bytes += rec.value().size();
    LearnedEntry* e = msg.add_learned();
    e->set_instance(i);
    e->set_value(rec.value());
    e->set_checksum(rec.checksum());
  }
  if (msg.learned_size() == 0 && stop.IsNotFound()) {
    // The first record is gone: a trim that ran after the core planned this
    // read (off the loop, a later round may trim first). Below the log's
    // start the answer is "use a checkpoint", as the core would give it.
    uint64_t start = 0;
    uint32_t checksum = 0;
    if (ReadLogStart(log, &start, &checksum).ok() && read.first < start) {
      msg.set_log_start(start);
      reply->log_start = start;
    }
  }
  if (msg.learned_size() == 0 && msg.log_start() == 0) return stop;
  msg.set_cluster_id(read.cluster_id);
  msg.set_group(read.group);
  msg.set_from(read.from);
  msg.set_chosen_end(read.chosen_end);
  reply->entries = static_cast<size_t>(msg.learned_size());
  reply->end = read.first + reply->entries;
  reply->bytes = msg.SerializeAsString();
  return stop;
}

}  // namespace paxos
}  // namespace chorus
