// Writes the seed corpus of the fuzz targets: a handful of valid inputs per
// target, made with the library's own encoders and, for the paxos targets,
// recorded from a real 3-node exchange (so a seed walks the stateful paths
// that random bytes rarely reach).
//   make_fuzz_corpus DIR    (DIR/<target>/seed-NN; scripts/fuzz.sh --corpus)
#include <sys/stat.h>

#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "node/frame.h"
#include "node/leveldb_log_format.h"
#include "node/leveldb_wal_tail.h"
#include "node/value_codec.h"
#include "paxos.pb.h"
#include "paxos/acceptor.h"
#include "paxos/catchup.h"
#include "paxos/core.h"
#include "paxos/value.h"
#include "unittest/fuzz/paxos_fuzz_input.h"
#include "unittest/support/mem_log_storage.h"
#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {
namespace {

class CorpusWriter {
 public:
  CorpusWriter(const std::string& root, const std::string& target) : dir_(root + "/" + target) {
    mkdir(root.c_str(), 0755);
    mkdir(dir_.c_str(), 0755);
  }
  bool Add(const std::string& bytes) {
    char name[32];
    std::snprintf(name, sizeof(name), "/seed-%02d", next_++);
    FILE* f = std::fopen((dir_ + name).c_str(), "wb");
    if (f == nullptr) return false;
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return std::fclose(f) == 0 && ok;
  }

 private:
  const std::string dir_;
  int next_ = 0;
};

std::string Byte(int b) { return std::string(1, static_cast<char>(b)); }

// ---- paxos: a 3-node exchange; node index 1 (id 2) is the fuzzed core ----

namespace px = paxos;

class Cluster {
 public:
  static constexpr int kFuzzed = 1;

  Cluster() {
    for (int i = 0; i < 3; ++i) {
      nodes_[i].id = static_cast<uint64_t>(i + 1);
      Open(i);
    }
  }

  void Propose(int i, const std::string& value) {
    if (i == kFuzzed) px::fuzz::AppendProposeOp(&trace_, value);
    px::Outputs out;
    nodes_[i].core->Propose(nodes_[i].next_token++, value, &out);
    Exec(i, &out);
  }
  void Fire(int i, px::TimerKind kind) {
    auto it = nodes_[i].timers.find(kind);
    if (it == nodes_[i].timers.end()) return;
    if (i == kFuzzed) px::fuzz::AppendTimeoutOp(&trace_, kind);
    px::Outputs out;
    nodes_[i].core->OnTimeout(it->second, &out);
    Exec(i, &out);
  }
  void Cancel(int i, uint8_t token) {
    if (i == kFuzzed) px::fuzz::AppendCancelOp(&trace_, token);
    px::Outputs out;
    nodes_[i].core->Cancel(token, &out);
    Exec(i, &out);
  }
  void Restart(int i) {
    if (i == kFuzzed) px::fuzz::AppendRestartOp(&trace_);
    nodes_[i].log.Crash();
    Open(i);
  }
  // Delivers queued messages until none is left (or `limit` of them).
  void Pump(size_t limit = SIZE_MAX) {
    for (size_t n = 0; n < limit && !net_.empty(); ++n) {
      const std::pair<int, std::string> m = net_.front();
      net_.pop_front();
      Deliver(m.first, m.second);
    }
  }
  void Drop() { net_.clear(); }
  void Isolate(bool on) { isolated_ = on; }

  // The fuzz input of everything node 2 was fed.
  const std::string& trace() const { return trace_; }
  // One message of each type node 2 received.
  const std::map<int, std::string>& singles() const { return singles_; }
  // The log of node i in paxos_recovery_fuzz's format (all writes kept).
  std::string LogInput(int i) const {
    std::string in;
    auto entry = [&in](int tag, const std::string& bytes) {
      in.push_back(static_cast<char>(tag));
      in.push_back(static_cast<char>(bytes.size() & 0xFF));
      in.push_back(static_cast<char>((bytes.size() >> 8) & 0xFF));
      in.append(bytes);
    };
    for (const auto& r : nodes_[i].records) {
      if (r.first < 64) entry(static_cast<int>(r.first << 2), r.second);
    }
    for (const auto& v : nodes_[i].variables) {
      entry(v.first == px::kPromiseVariable ? 2 : 3, v.second);
    }
    return in;
  }

 private:
  struct Node {
    uint64_t id = 0;
    testing::MemLogStorage log;
    std::unique_ptr<px::Core> core;
    std::map<px::TimerKind, px::TimerId> timers;
    std::map<uint64_t, std::string> records;
    std::map<std::string, std::string> variables;
    uint64_t next_token = 1;
  };

  void Open(int i) {
    Node& n = nodes_[i];
    n.core.reset();
    n.timers.clear();
    if (!px::Core::Open(px::fuzz::FuzzCoreOptions(n.id), &n.log, &n.core).ok()) std::abort();
    px::Outputs out;
    n.core->Start(&out);
    Exec(i, &out);
  }

  void Deliver(int i, const std::string& bytes) {
    if (i == kFuzzed) {
      px::fuzz::AppendMessageOp(&trace_, bytes);
      px::PaxosMsg msg;
      if (msg.ParseFromString(bytes)) {
        singles_.emplace(msg.type(), Byte(px::fuzz::kModeSingle) + bytes);
      }
    }
    px::Outputs out;
    nodes_[i].core->OnMessage(bytes, &out, px::Core::kSenderNotVerified);
    Exec(i, &out);
  }

  // Queues bytes from node i to node id `to` (or all others), unless the
  // fuzzed node is cut off.
  void Send(int i, uint64_t to, const std::string& bytes) {
    for (int j = 0; j < 3; ++j) {
      if (j == i || (to != px::kBroadcast && to != nodes_[j].id)) continue;
      if (isolated_ && (i == kFuzzed || j == kFuzzed)) continue;
      net_.emplace_back(j, bytes);
    }
  }

  void Exec(int i, px::Outputs* out) {
    Node& n = nodes_[i];
    if (!out->persist.empty()) {
      if (!n.log.Write(out->persist, out->sync).ok()) std::abort();
      for (const auto& r : out->persist.records) n.records[r.first] = r.second;
      for (const auto& v : out->persist.variables) n.variables[v.first] = v.second;
    }
    for (const px::OutMessage& m : out->messages) Send(i, m.to, m.bytes);
    // Catch-up from the log is a read the core plans for its runtime, done
    // after the round's persist (paxos/catchup.h): without it, a node behind
    // the others' chosen-value caches would never get a LEARN_VALUES.
    for (const px::CatchupRead& read : out->catchup_reads) {
      px::CatchupReply reply;
      // Whatever it returns, the entries before a stop are good to send.
      static_cast<void>(px::ReadCatchup(read, &n.log, &reply));
      if (!reply.bytes.empty()) Send(i, read.peer, reply.bytes);
    }
    px::fuzz::TrackTimers(*out, &n.timers);
  }

  Node nodes_[3];
  std::deque<std::pair<int, std::string>> net_;
  bool isolated_ = false;
  std::string trace_ = Byte(px::fuzz::kModeSequence);
  std::map<int, std::string> singles_;
};

bool WritePaxos(const std::string& root) {
  CorpusWriter seq(root, "paxos_message_fuzz");
  CorpusWriter rec(root, "paxos_recovery_fuzz");
  std::map<int, std::string> singles;
  bool ok = true;
  auto done = [&](const Cluster& c) {
    ok = ok && seq.Add(c.trace());
    ok = ok && rec.Add(c.LogInput(Cluster::kFuzzed));
    for (const auto& s : c.singles()) singles.insert(s);
  };
  {  // The fuzzed core proposes: phase 1, phase 2, chosen, then pipelined values.
    Cluster c;
    c.Propose(1, "a");
    c.Pump();
    c.Propose(1, "b");
    c.Propose(1, "c");
    c.Pump();
    c.Fire(1, px::TimerKind::kLearn);
    c.Pump();
    done(c);
  }
  {  // Its peers propose: it is an acceptor and a learner.
    Cluster c;
    c.Propose(0, "x");
    c.Pump();
    c.Propose(2, "y");
    c.Pump();
    c.Propose(0, "z");
    c.Pump();
    done(c);
  }
  {  // It falls behind beyond its window and catches up (ASK_LEARN, LEARN_VALUES).
    Cluster c;
    c.Isolate(true);
    for (int i = 0; i < 12; ++i) {
      c.Propose(0, "v" + std::to_string(i));
      c.Pump();
    }
    c.Isolate(false);
    for (int round = 0; round < 6; ++round) {
      c.Fire(1, px::TimerKind::kLearn);
      c.Pump();
      c.Fire(0, px::TimerKind::kLearn);
      c.Pump();
    }
    c.Propose(1, "after");
    c.Pump();
    done(c);
  }
  {  // Lost messages, timeouts, a crash and restart, a cancelled proposal.
    Cluster c;
    c.Propose(1, "p");
    c.Pump(2);
    c.Drop();
    c.Fire(1, px::TimerKind::kPrepare);
    c.Fire(1, px::TimerKind::kBackoff);
    c.Pump();
    c.Propose(1, "q");
    c.Restart(1);
    c.Propose(1, "r");
    c.Pump(3);
    c.Fire(1, px::TimerKind::kAccept);
    c.Fire(1, px::TimerKind::kBackoff);
    c.Pump();
    c.Propose(1, "s");
    c.Cancel(1, 4);
    c.Pump();
    done(c);
  }
  {  // Two proposers duel: rejects and higher ballots.
    Cluster c;
    c.Propose(0, "m");
    c.Propose(1, "n");
    c.Propose(2, "o");
    c.Pump();
    c.Fire(1, px::TimerKind::kAccept);
    c.Fire(1, px::TimerKind::kPrepare);
    c.Fire(1, px::TimerKind::kBackoff);
    c.Pump();
    done(c);
  }
  for (const auto& s : singles) ok = ok && seq.Add(s.second);
  return ok;
}

// ---- the byte codecs ----

bool WriteFrames(const std::string& root) {
  CorpusWriter w(root, "frame_fuzz");
  px::PaxosMsg msg;
  msg.set_type(px::PREPARE);
  msg.set_cluster_id(7);
  msg.set_from(2);
  const std::string paxos_payload = std::string(4, '\0') + msg.SerializeAsString();
  bool ok = true;
  ok = ok && w.Add(Byte(255) + EncodeFrame(7, 1, "hello"));
  ok = ok && w.Add(Byte(0) + EncodeFrame(7, 2, "") + EncodeFrame(7, 3, paxos_payload));
  ok = ok && w.Add(Byte(5) + EncodeFrame(7, 3, std::string(300, 'z')) + EncodeFrame(7, 1, "x"));
  ok = ok && w.Add(Byte(27) + EncodeFrame(8, 1, "foreign cluster"));
  ok = ok && w.Add(Byte(27) + EncodeFrame(7, 9, "non-member"));
  std::string bad_crc = EncodeFrame(7, 1, "flipped");
  bad_crc.back() ^= 1;
  ok = ok && w.Add(Byte(3) + EncodeFrame(7, 2, "ok") + bad_crc);
  std::string too_large = EncodeFrameHeader(7, 1, "");
  EncodeFixed32(&too_large[4], (1u << 20) + 1);
  ok = ok && w.Add(Byte(28) + too_large);
  // Trailer mode (byte 0's top bit): each payload is followed by the 8
  // bytes frame_fuzz.cc's FrameCheck accepts, byte i = (payload size + i).
  auto trailer = [](size_t payload_size) {
    std::string t(8, '\0');
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<char>((payload_size + i) & 0xff);
    return t;
  };
  ok = ok && w.Add(Byte(0x80 | 4) + EncodeFrame(7, 1, "hello") + trailer(5) + EncodeFrame(7, 2, "") +
                   trailer(0));
  std::string bad_trailer = trailer(2);
  bad_trailer[3] ^= 1;
  ok = ok && w.Add(Byte(0x80 | 9) + EncodeFrame(7, 3, paxos_payload) + trailer(paxos_payload.size()) +
                   EncodeFrame(7, 2, "ok") + bad_trailer);
  return ok;
}

bool WriteValues(const std::string& root) {
  CorpusWriter w(root, "value_codec_fuzz");
  AppValue a{1, "first", 11};
  AppValue b{2, "", 12};
  AppValue c{-1, "third value", 0};
  std::string v1_single = Byte(0x01);
  PutFixed32(&v1_single, 5);
  v1_single += "old single";
  std::string v1_batch = Byte(0x02);
  PutFixed32(&v1_batch, 2);
  for (const AppValue* v : {&a, &c}) {
    PutFixed32(&v1_batch, static_cast<uint32_t>(v->state_machine_id));
    PutFixed32(&v1_batch, static_cast<uint32_t>(v->payload.size()));
    v1_batch += v->payload;
  }
  bool ok = true;
  ok = ok && w.Add(EncodeSingleValue(3, 42, "payload"));
  ok = ok && w.Add(EncodeBatchValue({&a, &b, &c}));
  ok = ok && w.Add(v1_single);
  ok = ok && w.Add(v1_batch);
  ok = ok && w.Add(px::EncodeValue(2, 99, EncodeBatchValue({&a, &b})));
  ok = ok && w.Add(px::EncodeValue(1, 7, ""));
  return ok;
}

bool WriteLogRecords(const std::string& root) {
  namespace ll = leveldb_log;
  CorpusWriter w(root, "log_record_fuzz");
  px::InstanceRecord rec;
  rec.mutable_accepted_ballot()->set_number(3);
  rec.mutable_accepted_ballot()->set_node_id(1);
  rec.set_value(px::EncodeValue(1, 5, "v"));
  rec.set_chosen(true);
  const ll::LogIdentity id{9, 0, (uint64_t{0x7f000001} << 16) | 7001};
  std::string instance(8, '\0');
  EncodeFixed64(&instance[0], 17);
  const std::string name = "paxos.promise";  // 13 bytes: byte 0 = (13 << 1) | 1
  bool ok = true;
  ok = ok && w.Add(Byte(0) + instance +
                   ll::EncodeChecksummed(ll::RecordKey(17), rec.SerializeAsString()));
  ok = ok && w.Add(Byte((13 << 1) | 1) + name +
                   ll::EncodeChecksummed(ll::VariableKey(name), "promise bytes"));
  ok = ok && w.Add(Byte(1) + ll::EncodeMeta(id));
  ok = ok && w.Add(Byte(1) + ll::EncodeMetaV1(id.cluster_id, id.group));
  ok = ok && w.Add(Byte(1) + ll::EncodeMeta({10, 0, id.node_id}));
  return ok;
}

bool WriteWal(const std::string& root) {
  CorpusWriter w(root, "wal_tail_fuzz");
  // Written mode: (len lo, len hi, fill) per write, then the cut byte.
  auto writes = [](std::vector<std::pair<uint16_t, char>> list, int cut) {
    std::string in = Byte(1);
    for (const auto& e : list) {
      in.push_back(static_cast<char>(e.first & 0xFF));
      in.push_back(static_cast<char>(e.first >> 8));
      in.push_back(e.second);
    }
    return in + Byte(cut);
  };
  // Raw mode: one FULL record, then a torn (zeroed) tail.
  std::string raw = Byte(0);
  const std::string payload = "a leveldb write batch";
  char header[leveldb_wal::kHeaderSize];
  header[4] = static_cast<char>(payload.size());
  header[5] = 0;
  header[6] = 1;
  uint32_t crc = crc32c::Extend(crc32c::Extend(0, header + 6, 1), payload.data(), payload.size());
  const uint32_t rot = (crc >> 15) | (crc << 17);
  EncodeFixed32(header, rot + 0xa282ead8ul);
  raw.append(header, sizeof(header));
  raw += payload;
  raw.append(40, '\0');
  raw += "garbage after the tail";
  bool ok = true;
  ok = ok && w.Add(writes({{10, 'a'}, {200, 'b'}, {0, 'c'}}, 255));
  ok = ok && w.Add(writes({{100, 'x'}, {0x8000 + 12000, 'y'}, {30, 'z'}}, 128));
  ok = ok && w.Add(writes({{32761, 'f'}, {5, 'g'}}, 200));
  ok = ok && w.Add(raw);
  return ok;
}

}  // namespace
}  // namespace chorus

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  const bool ok = chorus::WritePaxos(root) && chorus::WriteFrames(root) &&
                  chorus::WriteValues(root) && chorus::WriteLogRecords(root) &&
                  chorus::WriteWal(root);
  if (!ok) {
    std::fprintf(stderr, "make_fuzz_corpus: cannot write under %s\n", root.c_str());
    return 1;
  }
  return 0;
}
