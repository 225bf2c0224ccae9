#include "node/tcp_resolver.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

#include "node/tcp_transport_testing.h"

namespace chorus {
namespace tcp {

namespace {

std::mutex g_resolve_hook_mu;
tcp_transport_testing::ResolveFn g_resolve_hook;  // GUARDED_BY(g_resolve_hook_mu)

Status Resolve(const std::string& host, uint16_t port, std::vector<SockAddr>* addrs) {
  tcp_transport_testing::ResolveFn hook;
  {
    std::lock_guard<std::mutex> l(g_resolve_hook_mu);
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
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Req> requests;     // GUARDED_BY(mu)
  std::vector<Result> results;  // GUARDED_BY(mu)
  bool started = false;         // GUARDED_BY(mu)
  bool stopped = false;         // GUARDED_BY(mu)
};

void Resolver::Run(const std::shared_ptr<State>& state) {
  std::unique_lock<std::mutex> l(state->mu);
  while (true) {
    state->cv.wait(l, [&] { return state->stopped || !state->requests.empty(); });
    if (state->stopped) return;
    State::Req req = std::move(state->requests.front());
    state->requests.pop_front();
    l.unlock();
    Result r;
    r.key = req.key;
    r.status = Resolve(req.host, req.port, &r.addrs);
    l.lock();
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
  std::lock_guard<std::mutex> l(state_->mu);
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
  state_->cv.notify_one();
  return Status::OK();
}

std::vector<Resolver::Result> Resolver::TakeResults() {
  std::lock_guard<std::mutex> l(state_->mu);
  std::vector<Result> out;
  out.swap(state_->results);
  return out;
}

void Resolver::Stop() {
  std::lock_guard<std::mutex> l(state_->mu);
  state_->stopped = true;
  state_->requests.clear();
  state_->cv.notify_all();
}

}  // namespace tcp

namespace tcp_transport_testing {
void SetResolver(ResolveFn fn) {
  std::lock_guard<std::mutex> l(tcp::g_resolve_hook_mu);
  tcp::g_resolve_hook = std::move(fn);
}
}  // namespace tcp_transport_testing

}  // namespace chorus
