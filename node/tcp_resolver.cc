#include "node/tcp_resolver.h"

#include <deque>
#include <system_error>
#include <thread>

#include "node/tcp_transport_testing.h"
#include "utils/mutex.h"
#include "utils/thread_name.h"

namespace chorus {
namespace tcp {

namespace {

Mutex g_resolve_hook_mu;
tcp_transport_testing::ResolveFn g_resolve_hook GUARDED_BY(g_resolve_hook_mu);

Status Resolve(const std::string& host, uint16_t port, std::vector<SockAddr>* addrs) {
  tcp_transport_testing::ResolveFn hook;
  {
    MutexLock l(&g_resolve_hook_mu);
    hook = g_resolve_hook;
  }
  return hook ? hook(host, port, addrs) : ResolveTcp(host, port, addrs);
}

}  // namespace

struct Resolver::State {
  struct Req {
    uint64_t key;
    std::string host;
    uint16_t port;
  };
  std::function<void()> wake;
  Mutex mu;
  CondVar cv;
  std::deque<Req> requests GUARDED_BY(mu);
  std::vector<Result> results GUARDED_BY(mu);
  bool started GUARDED_BY(mu) = false;
  bool stopped GUARDED_BY(mu) = false;
};

void Resolver::Run(const std::shared_ptr<State>& state) {
  SetThreadName("chorus-resolve");
  MutexLock l(&state->mu);
  while (true) {
    state->cv.Wait(&state->mu, [&]() REQUIRES(state->mu) {
      return state->stopped || !state->requests.empty();
    });
    if (state->stopped) return;
    State::Req req = std::move(state->requests.front());
    state->requests.pop_front();
    l.Unlock();
    Result r;
    r.key = req.key;
    r.status = Resolve(req.host, req.port, &r.addrs);
    l.Lock();
    if (state->stopped) return;
    state->results.push_back(std::move(r));
    state->wake();
  }
}

Resolver::Resolver(std::function<void()> wake) : state_(std::make_shared<State>()) {
  state_->wake = std::move(wake);
}

Resolver::~Resolver() { Stop(); }

Status Resolver::Request(uint64_t key, const std::string& host, uint16_t port) {
  MutexLock l(&state_->mu);
  if (state_->stopped) return Status::Stopped("transport is stopped");
  if (!state_->started) {
    try {
      std::shared_ptr<State> state = state_;
      std::thread([state] { Run(state); }).detach();
      state_->started = true;
    } catch (const std::system_error& e) {
      // The caller counts a failed resolution; its next attempt tries again.
      return Status::IOError(std::string("cannot start the resolver thread: ") + e.what());
    }
  }
  state_->requests.push_back(State::Req{key, host, port});
  state_->cv.Signal();
  return Status::OK();
}

std::vector<Resolver::Result> Resolver::TakeResults() {
  MutexLock l(&state_->mu);
  std::vector<Result> out;
  out.swap(state_->results);
  return out;
}

void Resolver::Stop() {
  MutexLock l(&state_->mu);
  state_->stopped = true;
  state_->requests.clear();
  state_->cv.SignalAll();
}

}  // namespace tcp

namespace tcp_transport_testing {
void SetResolver(ResolveFn fn) {
  MutexLock l(&tcp::g_resolve_hook_mu);
  tcp::g_resolve_hook = std::move(fn);
}
}  // namespace tcp_transport_testing

}  // namespace chorus
