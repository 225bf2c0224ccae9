#include "node/node_impl.h"

#include <chrono>
#include <thread>

#include "chorus/leveldb_log_storage.h"
#include "node/options_validation.h"
#include "utils/coding.h"
#include "utils/notifier_pool.h"
#include "utils/timer_thread.h"

namespace chorus {

Node::~Node() = default;

Status Node::Open(const Options& options, std::unique_ptr<Node>* node) {
  return NodeImpl::OpenWithHooks(options, RuntimeHooks(), node);
}

Status NodeImpl::OpenWithHooks(const Options& options, const RuntimeHooks& hooks,
                               std::unique_ptr<Node>* node) {
  Status s = ValidateNodeOptions(options);
  if (!s.ok()) return s;
  auto impl = std::make_unique<NodeImpl>(options, hooks);
  s = impl->Init();
  if (!s.ok()) return s;  // ~NodeImpl stops whatever Init started
  *node = std::move(impl);
  return Status::OK();
}

NodeImpl::NodeImpl(const Options& options, const RuntimeHooks& hooks)
    : options_(options),
      // Timers of every node of the process share one TimerThread.
      runtime_(GlobalTimerThread(), hooks),
      logger_(options.log_hook, options.log_level) {}

NodeImpl::~NodeImpl() {
  destroying_.store(true, std::memory_order_seq_cst);
  Stop();  // sets stopping_ first
  // Stop answered every waiter; wait until each call has left the node.
  while (active_calls_.load(std::memory_order_seq_cst) > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status NodeImpl::OpenLog(uint32_t group, std::unique_ptr<LogStorage>* log) {
  if (options_.log_storage_factory) return options_.log_storage_factory(group, log);
  LevelDbLogOptions lo;
  lo.cluster_id = options_.cluster_id;
  lo.group = group;
  lo.node_id = options_.self.id();
  lo.create_if_missing = options_.create_if_missing;
  Logger* logger = &logger_;
  lo.warning_log = [logger](const std::string& line) {
    CHORUS_LOG(logger, kWarning, "%s", line.c_str());
  };
  return OpenLevelDbLogStorage(options_.data_dir + "/g" + std::to_string(group), lo, log);
}

Status NodeImpl::Init() {
  Status id_status = LoadOrCreateIdentity(options_, &logger_, &identity_);
  if (!id_status.ok()) return id_status;
  address_book_ = std::make_unique<AddressBook>(options_, options_.group_count);
  if (options_.transport != nullptr) {
    transport_ = options_.transport;
  } else {
    TcpTransportOptions to;
    to.self = options_.self;
    // Options::nodes and join for now; the groups' memberships are added
    // (SetPeers) once their logs are open, before the transport starts.
    to.nodes = address_book_->Peers();
    to.cluster_id = options_.cluster_id;
    to.max_frame_bytes = options_.max_frame_bytes;
    to.cluster_secret = options_.cluster_secret;
    Logger* logger = &logger_;  // connections up/down, through the node's logger
    to.log_hook = [logger](LogLevel level, const std::string& line) {
      if (logger->Enabled(level)) logger->Log(level, "%s", line.c_str());
    };
    to.log_level = options_.log_level;
    Status s = NewTcpTransport(to, &own_transport_);
    if (!s.ok()) return s;
    transport_ = own_transport_.get();
  }

  // Each peer keeps one catch-up request outstanding per group (and asks
  // again on its learn tick): twice that many reads may wait, room for a
  // re-ask racing a slow read; more would only repeat queued ones.
  const size_t peers = options_.nodes.size() > 1 ? options_.nodes.size() - 1 : 1;
  catchup_reader_ = std::make_unique<CatchupReader>(
      transport_, &logger_, 2 * peers * static_cast<size_t>(options_.group_count));
  Status started = catchup_reader_->Start();
  if (!started.ok()) return started;
  // Each group has at most one checkpoint in progress.
  checkpoint_worker_ = std::make_unique<CheckpointWorker>(static_cast<size_t>(options_.group_count));
  started = checkpoint_worker_->Start();
  if (!started.ok()) return started;

  CheckpointTransferOptions cto;
  cto.cluster_id = options_.cluster_id;
  cto.self = options_.self.id();
  for (const NodeInfo& n : options_.nodes) {
    if (n.id() != cto.self) cto.peers.push_back(n.id());
  }
  cto.chunk_bytes = options_.checkpoint_chunk_bytes;
  cto.max_chunk_bytes = options_.max_frame_bytes / 2;
  cto.send_bytes_per_sec = options_.checkpoint_send_bytes_per_sec;
  checkpoint_transfer_ = std::make_unique<CheckpointTransfer>(cto, transport_, &logger_);

  GroupEnv env;
  env.options = &options_;
  env.transport = transport_;
  env.runtime = &runtime_;
  env.notifier_pool = NotifierPool::Default();
  env.logger = &logger_;
  env.catchup_reader = catchup_reader_.get();
  env.checkpoint_worker = checkpoint_worker_.get();
  CheckpointTransfer* transfer = checkpoint_transfer_.get();
  env.request_checkpoint = [transfer](uint32_t group, uint64_t peer, uint64_t above) {
    transfer->Request(group, peer, above);
  };
  env.incarnation = identity_.incarnation;
  env.joined = identity_.joined;
  env.address_book = address_book_.get();
  // A group's loop calls it; the book is thread-safe, and so is SetPeers.
  env.on_membership_change = [this](uint32_t group, const paxos::Membership& m) {
    if (address_book_->SetGroup(group, m) && groups_opened_.load(std::memory_order_acquire)) {
      PushPeers();
    }
  };

  std::vector<std::vector<StateMachine*>> machines(options_.group_count);
  for (const auto& [group, sm] : options_.state_machines) machines[group].push_back(sm);
  for (int g = 0; g < options_.group_count; ++g) {
    std::unique_ptr<LogStorage> log;
    Status s = OpenLog(static_cast<uint32_t>(g), &log);
    if (!s.ok()) return s.Annotate("opening the paxos log of group " + std::to_string(g));
    std::unique_ptr<Group> group;
    s = Group::Open(env, static_cast<uint32_t>(g), std::move(log), machines[g], &group);
    if (!s.ok()) return s;
    // The checkpoint transfer serves from and receives into this store.
    if (CheckpointStore* store = group->checkpoint_store()) {
      Group* raw = group.get();  // outlives the transfer's threads (Stop order)
      checkpoint_transfer_->AddGroup(static_cast<uint32_t>(g), store,
                                     [raw](const CheckpointManifest& m) {
                                       raw->PostLoadCheckpoint(m.instance);
                                     });
    }
    groups_.push_back(std::move(group));
  }
  // Every group recorded its membership: the transport starts with the whole book.
  groups_opened_.store(true, std::memory_order_release);
  PushPeers();
  for (auto& group : groups_) {
    Status s = group->Start();
    if (!s.ok()) return s;
  }
  // The groups registered with it in Group::Open (checkpoint transfer, B2).
  Status transfer_started = checkpoint_transfer_->Start();
  if (!transfer_started.ok()) return transfer_started;
  return transport_->Start([this](uint64_t from, std::string message) {
    OnMessage(from, std::move(message));
  });
}

void NodeImpl::OnMessage(uint64_t from, std::string message) {
  // The transport checked the sender is a member; the core checks the rest,
  // the message's own sender against `from` included. 0 is no node's id: a
  // transport that verified no sender must not make the core skip that check.
  if (from == 0 || message.size() < 4) {
    misrouted_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint32_t prefix = DecodeFixed32(message.data());
  // The top bit marks the group's checkpoint channel: off the group's loop.
  if ((prefix & kCheckpointChannel) != 0) {
    message.erase(0, 4);
    if (IsMembershipMessage(message)) {
      OnMembershipFrame(from, prefix & ~kCheckpointChannel, std::move(message));
      return;
    }
    checkpoint_transfer_->OnMessage(from, prefix & ~kCheckpointChannel, std::move(message));
    return;
  }
  Group* group = FindGroup(prefix);
  if (group == nullptr) {
    misrouted_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  message.erase(0, 4);
  group->PostMessage(from, std::move(message));
}

Group* NodeImpl::FindGroup(uint32_t group) const {
  return group < groups_.size() ? groups_[group].get() : nullptr;
}

Status NodeImpl::Propose(uint32_t group, const std::string& value, uint64_t* instance_id,
                         ExecuteContext* ctx) {
  // node.h: these say nothing unless the value is executed.
  if (instance_id != nullptr) *instance_id = 0;
  if (ctx != nullptr) ctx->proposal_id = 0;
  ActiveCall call(this);
  if (call.stopping()) return Status::Stopped("the node is stopping");
  Group* g = FindGroup(group);
  if (g == nullptr) return Status::InvalidArgument("no group " + std::to_string(group));
  const auto began = std::chrono::steady_clock::now();
  return g->metrics()->CountPropose(g->Propose(value, ctx, /*batch=*/false, instance_id, nullptr),
                                    began);
}

Status NodeImpl::BatchPropose(uint32_t group, const std::string& value, uint64_t* instance_id,
                              uint32_t* batch_index, ExecuteContext* ctx) {
  if (instance_id != nullptr) *instance_id = 0;
  if (batch_index != nullptr) *batch_index = 0;
  if (ctx != nullptr) ctx->proposal_id = 0;
  ActiveCall call(this);
  if (call.stopping()) return Status::Stopped("the node is stopping");
  Group* g = FindGroup(group);
  if (g == nullptr) return Status::InvalidArgument("no group " + std::to_string(group));
  const auto began = std::chrono::steady_clock::now();
  return g->metrics()->CountPropose(g->Propose(value, ctx, /*batch=*/true, instance_id, batch_index),
                                    began);
}

void NodeImpl::StartAsync(uint32_t group, const std::string& value, ProposeCallback done,
                          const ExecuteContext* ctx, bool batch) {
  const auto began = std::chrono::steady_clock::now();
  ActiveCall call(this);
  Status refused;
  Group* g = nullptr;
  if (call.stopping()) {
    refused = Status::Stopped("the node is stopping");
  } else if ((g = FindGroup(group)) == nullptr) {
    refused = Status::InvalidArgument("no group " + std::to_string(group));
  }
  if (g == nullptr) {
    ProposeResult none;
    if (done) done(refused, &none);
    return;
  }
  // Stop() answers it (Group::Stop) if it does not end sooner; this call
  // only has to stay counted while it touches the group.
  g->ProposeAsync(value, std::move(done), ctx, batch, began);
}

void NodeImpl::ProposeAsync(uint32_t group, const std::string& value, ProposeCallback done,
                            const ExecuteContext* ctx) {
  StartAsync(group, value, std::move(done), ctx, /*batch=*/false);
}

void NodeImpl::BatchProposeAsync(uint32_t group, const std::string& value, ProposeCallback done,
                                 const ExecuteContext* ctx) {
  StartAsync(group, value, std::move(done), ctx, /*batch=*/true);
}

// The queries keep answering after Stop() (the groups stay allocated until
// the destructor); they register like the proposals so that the destructor
// waits for them too.
uint64_t NodeImpl::GetNowInstanceId(uint32_t group) const {
  ActiveCall call(const_cast<NodeImpl*>(this));
  Group* g = call.destroying() ? nullptr : FindGroup(group);
  return g == nullptr ? 0 : g->now_instance_id();
}

uint64_t NodeImpl::GetMinChosenInstanceId(uint32_t group) const {
  ActiveCall call(const_cast<NodeImpl*>(this));
  Group* g = call.destroying() ? nullptr : FindGroup(group);
  return g == nullptr ? 0 : g->min_chosen_instance_id();
}

Status NodeImpl::GetGroupStatus(uint32_t group) const {
  ActiveCall call(const_cast<NodeImpl*>(this));
  if (call.destroying()) return Status::Stopped("the node is being destroyed");
  Group* g = FindGroup(group);
  if (g == nullptr) return Status::InvalidArgument("no group " + std::to_string(group));
  return g->health();
}

Status NodeImpl::GetGroupStatus(uint32_t group, GroupStatus* status) const {
  ActiveCall call(const_cast<NodeImpl*>(this));
  if (call.destroying()) return Status::Stopped("the node is being destroyed");
  Group* g = FindGroup(group);
  if (g == nullptr) return Status::InvalidArgument("no group " + std::to_string(group));
  const MasterSnapshot m = g->master();
  GroupStatus out;
  out.executed = g->now_instance_id();
  out.master_node = m.node;
  out.master_chosen_end = m.master_chosen_end;
  out.caught_up = m.node != 0 && out.executed >= m.master_chosen_end;
  out.checkpoint_instance = g->checkpoint_instance();
  out.log_start = g->min_chosen_instance_id();
  out.checkpoints_made = g->checkpoints_made();
  out.checkpoints_loaded = g->checkpoints_loaded();
  const CheckpointTransferProgress p = checkpoint_transfer_->Progress(group);
  out.transfer_instance = p.instance;
  out.transfer_bytes_done = p.bytes_done;
  out.transfer_bytes_total = p.bytes_total;
  out.checkpoints_sent = p.sent;
  const MembershipSnapshot membership = g->membership();
  out.role = membership.role;
  out.membership_version = membership.info.version;
  if (status != nullptr) *status = out;
  return Status::OK();
}

// Metrics: the rest is in node_metrics.cc.
Status NodeImpl::GetMetrics(uint32_t group, GroupMetrics* metrics) const {
  ActiveCall call(const_cast<NodeImpl*>(this));
  if (call.destroying()) return Status::Stopped("the node is being destroyed");
  return FillMetrics(group, metrics);
}

Status NodeImpl::MasterGroup(const ActiveCall& call, uint32_t group, bool refuse_when_stopping,
                             Group** out) const {
  if (call.destroying()) return Status::Stopped("the node is being destroyed");
  Group* g = FindGroup(group);
  if (g == nullptr) return Status::InvalidArgument("no group " + std::to_string(group));
  if (!options_.master_election) {
    return Status::NotSupported("master_election is off (Options::master_election)");
  }
  if (refuse_when_stopping && call.stopping()) return Status::Stopped("the node is stopping");
  *out = g;
  return Status::OK();
}

Status NodeImpl::GetMaster(uint32_t group, MasterInfo* info) const {
  ActiveCall call(const_cast<NodeImpl*>(this));
  Group* g = nullptr;
  Status s = MasterGroup(call, group, /*refuse_when_stopping=*/false, &g);
  if (!s.ok()) return s;
  const MasterSnapshot m = g->master();
  NodeInfo node;
  if (m.node == 0 || !address_book_->Find(m.node, &node)) {
    return Status::NotFound("group " + std::to_string(group) + " has no master known here");
  }
  if (info != nullptr) {
    info->node = node;
    info->epoch_number = m.epoch_number;
    info->epoch_node = m.epoch_node;
    info->known = true;
  }
  return Status::OK();
}

bool NodeImpl::IsMaster(uint32_t group) const {
  ActiveCall call(const_cast<NodeImpl*>(this));
  Group* g = nullptr;
  if (!MasterGroup(call, group, /*refuse_when_stopping=*/false, &g).ok()) return false;
  const MasterSnapshot m = g->master();
  return m.is_master(options_.self.id()) && m.holds_lease;
}

Status NodeImpl::ReadBarrier(uint32_t group, uint64_t* instance) {
  if (instance != nullptr) *instance = 0;
  ActiveCall call(this);
  Group* g = nullptr;
  Status s = MasterGroup(call, group, /*refuse_when_stopping=*/true, &g);
  if (!s.ok()) return s;
  return g->ReadBarrier(instance);
}

Status NodeImpl::Transfer(uint32_t group, uint64_t target) {
  ActiveCall call(this);
  Group* g = nullptr;
  Status s = MasterGroup(call, group, /*refuse_when_stopping=*/true, &g);
  if (!s.ok()) return s;
  return g->TransferMaster(target);
}

Status NodeImpl::TransferMaster(uint32_t group, uint64_t node_id) {
  // A voter of the group's newest membership (the core checks it too).
  bool member = false;
  if (Group* g = FindGroup(group)) {
    for (const MemberInfo& m : g->membership().info.members) {
      member = member || (m.voter && m.node.id() == node_id);
    }
  }
  if (!member) {
    // The other checks (group, master_election) come first, as for every call.
    ActiveCall call(this);
    Group* g = nullptr;
    Status s = MasterGroup(call, group, /*refuse_when_stopping=*/false, &g);
    if (!s.ok()) return s;
    return Status::InvalidArgument("TransferMaster: node " + std::to_string(node_id) +
                                   " is not a member");
  }
  return Transfer(group, node_id);
}

Status NodeImpl::StepDown(uint32_t group) { return Transfer(group, 0); }

void NodeImpl::Stop() {
  MutexLock lock(&stop_mu_);
  if (stopped_) return;
  stopped_ = true;
  // Before anything stops: a call that registers from now on sees it.
  stopping_.store(true, std::memory_order_seq_cst);
  // No more incoming messages, then no more loops, then no more catch-up
  // reads. The groups (and their logs) stay allocated until the destructor
  // so queries stay safe.
  if (transport_ != nullptr) transport_->Stop();
  // No transfer touches a group's store from here on (checkpoint transfer, B2).
  if (checkpoint_transfer_ != nullptr) checkpoint_transfer_->Stop();
  for (auto& group : groups_) group->Stop();
  // No loop hands it reads any more; once it returns, no log is read.
  if (catchup_reader_ != nullptr) catchup_reader_->Stop();
  // No loop submits checkpoints any more; once it returns, no checkpoint
  // writer runs and no store is written.
  if (checkpoint_worker_ != nullptr) checkpoint_worker_->Stop();
}

}  // namespace chorus
