// /metrics: GroupMetrics and TransportMetrics as Prometheus metric families,
// serialized by prometheus-cpp's TextSerializer. Every group metric carries
// the label group="<index>"; latencies are exported in seconds (the metrics
// structs count microseconds), with the fixed buckets of chorus/metrics.h
// made cumulative as Prometheus wants them.
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include "chorus/metrics.h"
#include "chorus/metrics_server.h"

namespace chorus {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

class Families {
 public:
  // Adds one sample of family `name` (created on first use).
  ClientMetric* Sample(const std::string& name, const std::string& help, MetricType type,
                       std::vector<ClientMetric::Label> labels) {
    MetricFamily* f = nullptr;
    for (MetricFamily& existing : families_) {
      if (existing.name == name) f = &existing;
    }
    if (f == nullptr) {
      families_.push_back(MetricFamily{name, help, type, {}});
      f = &families_.back();
    }
    f->metric.emplace_back();
    f->metric.back().label = std::move(labels);
    return &f->metric.back();
  }
  void Counter(const std::string& name, const std::string& help,
               std::vector<ClientMetric::Label> labels, uint64_t v) {
    Sample("chorus_" + name, help, MetricType::Counter, std::move(labels))->counter.value =
        static_cast<double>(v);
  }
  void Gauge(const std::string& name, const std::string& help,
             std::vector<ClientMetric::Label> labels, double v) {
    Sample("chorus_" + name, help, MetricType::Gauge, std::move(labels))->gauge.value = v;
  }
  // `scale` turns the recorded unit into the exported one (1e-6: us -> s).
  template <size_t N>
  void Hist(const std::string& name, const std::string& help,
            std::vector<ClientMetric::Label> labels, const Histogram<N>& h,
            const uint64_t (&bounds)[N], double scale) {
    ClientMetric* m = Sample("chorus_" + name, help, MetricType::Histogram, std::move(labels));
    uint64_t cumulative = 0;
    for (size_t i = 0; i < N; ++i) {
      cumulative += h.counts[i];
      m->histogram.bucket.push_back({cumulative, static_cast<double>(bounds[i]) * scale});
    }
    m->histogram.bucket.push_back({h.count, std::numeric_limits<double>::infinity()});
    m->histogram.sample_count = h.count;
    m->histogram.sample_sum = static_cast<double>(h.sum) * scale;
  }
  const std::vector<MetricFamily>& families() const { return families_; }

 private:
  std::vector<MetricFamily> families_;
};

void AddGroup(const GroupMetrics& m, const std::string& group, Families* f) {
  auto g = [&group]() { return std::vector<ClientMetric::Label>{{"group", group}}; };
  auto with = [&group](const char* k, const char* v) {
    return std::vector<ClientMetric::Label>{{"group", group}, {k, v}};
  };
  const char* kProposals = "Propose/BatchPropose calls of this node, by outcome";
  f->Counter("proposals_total", kProposals, with("outcome", "ok"), m.proposals_ok);
  f->Counter("proposals_total", kProposals, with("outcome", "busy"), m.proposals_busy);
  f->Counter("proposals_total", kProposals, with("outcome", "timeout"), m.proposals_timeout);
  f->Counter("proposals_total", kProposals, with("outcome", "not_master"), m.proposals_not_master);
  f->Counter("proposals_total", kProposals, with("outcome", "stopped"), m.proposals_stopped);
  f->Counter("proposals_total", kProposals, with("outcome", "other"), m.proposals_failed_other);
  f->Hist("propose_latency_seconds", "Latency of the proposals that returned OK", g(),
          m.propose_latency_us, kLatencyBoundsUs, 1e-6);
  f->Counter("log_writes_total", "Log writes (one per round that persists)", g(), m.log_writes);
  f->Counter("log_syncs_total", "Synced log writes (fsync)", g(), m.log_syncs);
  f->Hist("log_sync_latency_seconds", "Latency of the synced log writes", g(), m.sync_latency_us,
          kLatencyBoundsUs, 1e-6);
  f->Counter("rounds_total", "Rounds the group loop executed", g(), m.rounds);
  f->Hist("instances_per_round", "Chosen instances applied per round", g(),
          m.instances_per_round, kSizeBoundsCount, 1);
  f->Hist("values_per_instance", "Application values per applied instance", g(),
          m.values_per_instance, kSizeBoundsCount, 1);
  f->Counter("values_executed_total", "Application values executed", g(), m.values_executed);
  f->Counter("instances_executed_total", "Instances applied", g(), m.instances_executed);
  f->Gauge("chosen_end", "Instances below it are chosen here", g(), m.chosen_end);
  f->Gauge("executed", "The next instance the state machines execute", g(), m.executed);
  f->Gauge("log_start", "The first instance the log holds", g(), m.log_start);
  f->Gauge("instances_in_flight", "This node's proposals inside the core", g(),
           m.instances_in_flight);
  f->Gauge("proposals_backlog", "Proposals waiting for room in the core", g(),
           m.proposals_backlog);
  f->Gauge("inbound_queue_events", "Events queued for the group loop", g(),
           m.inbound_queue_events);
  f->Counter("inbound_dropped_total", "Messages dropped: inbound queue full", g(),
             m.inbound_dropped);
  f->Gauge("is_master", "1 when this node is the ready master", g(), m.is_master ? 1 : 0);
  f->Counter("master_changes_total", "Changes of the known master", g(), m.master_changes);
  f->Counter("master_gained_total", "Times this node became the master", g(), m.master_gained);
  f->Counter("master_lost_total", "Times this node stopped being the master", g(), m.master_lost);
  f->Counter("elections_started_total", "Phase 1 rounds begun to become master", g(),
             m.elections_started);
  f->Counter("catchups_started_total", "Catch-ups begun", g(), m.catchups_started);
  f->Counter("catchups_finished_total", "Catch-ups ended", g(), m.catchups_finished);
  f->Gauge("catching_up", "1 while catching up", g(), m.catching_up ? 1 : 0);
  f->Counter("catchup_requests_total", "ASK_LEARN / CONFIRM_LEARN sent", g(), m.catchup_requests);
  f->Counter("catchup_reads_total", "Catch-up batches read from the log for peers", g(),
             m.catchup_reads);
  f->Gauge("checkpoint_instance", "The newest stored checkpoint", g(), m.checkpoint_instance);
  f->Counter("checkpoints_made_total", "Checkpoints made", g(), m.checkpoints_made);
  f->Counter("checkpoints_loaded_total", "Checkpoints received and installed", g(),
             m.checkpoints_loaded);
  f->Counter("checkpoints_sent_total", "Checkpoints sent to peers", g(), m.checkpoints_sent);
  f->Counter("checkpoints_needed_total", "'Use a checkpoint' answers received", g(),
             m.checkpoints_needed);
  f->Counter("checkpoint_replies_total", "'Use a checkpoint' answers sent", g(),
             m.checkpoint_replies);
  f->Counter("log_trims_total", "Log trims", g(), m.log_trims);
  f->Gauge("transfer_instance", "Checkpoint being received (0: none)", g(), m.transfer_instance);
  f->Gauge("transfer_bytes_done", "Bytes of it received", g(), m.transfer_bytes_done);
  f->Gauge("transfer_bytes_total", "Its size", g(), m.transfer_bytes_total);
  const char* kBad = "Messages the core dropped, by reason";
  f->Counter("messages_dropped_total", kBad, with("reason", "garbage"), m.messages_garbage);
  f->Counter("messages_dropped_total", kBad, with("reason", "foreign"), m.messages_foreign);
}

void AddTransport(const TransportMetrics& t, Families* f) {
  const std::vector<ClientMetric::Label> none;
  f->Counter("transport_bytes_sent_total", "Bytes written to sockets", none, t.bytes_sent);
  f->Counter("transport_bytes_received_total", "Bytes read from sockets", none, t.bytes_received);
  f->Counter("transport_frames_sent_total", "Frames sent", none, t.frames_sent);
  f->Counter("transport_frames_received_total", "Frames received", none, t.frames_received);
  const char* kDrops = "Frames or sends dropped, by reason";
  const std::pair<const char*, uint64_t> drops[] = {
      {"corrupt", t.dropped_corrupt},           {"too_large", t.dropped_too_large},
      {"foreign_cluster", t.dropped_foreign_cluster}, {"non_member", t.dropped_non_member},
      {"bad_mac", t.dropped_bad_mac},
      {"queue_full", t.dropped_queue_full},     {"misrouted", t.misrouted}};
  for (const auto& [reason, n] : drops) {
    f->Counter("transport_dropped_total", kDrops, {{"reason", reason}}, n);
  }
  f->Counter("transport_connects_total", "Outgoing connections established", none, t.connects);
  f->Counter("transport_disconnects_total", "Established connections lost (reconnects follow)",
             none, t.disconnects);
  f->Counter("transport_connect_timeouts_total", "Connects abandoned", none, t.connect_timeouts);
  f->Counter("transport_auth_challenge_failures_total",
             "Outgoing connections without a valid challenge (cluster_secret)", none,
             t.auth_challenge_failures);
  f->Counter("transport_connections_timed_out_total", "Broken by the dead-peer detection", none,
             t.connections_timed_out);
  f->Counter("transport_connections_closed_on_error_total", "Incoming closed for a bad frame",
             none, t.connections_closed_on_error);
  f->Counter("transport_connections_rejected_total", "Incoming refused: over the limit", none,
             t.connections_rejected_over_limit);
}

}  // namespace

std::string PrometheusText(const Node& node, const Options& options) {
  Families f;
  for (int g = 0; g < options.group_count; ++g) {
    GroupMetrics m;
    if (node.GetMetrics(static_cast<uint32_t>(g), &m).ok()) AddGroup(m, std::to_string(g), &f);
  }
  TransportMetrics t;
  if (node.GetTransportMetrics(&t).ok() && t.known) AddTransport(t, &f);
  return prometheus::TextSerializer().Serialize(f.families());
}

}  // namespace chorus
