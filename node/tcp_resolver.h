// Resolver: resolves the host names of the TCP transport's peers on a
// thread of its own, so that a slow name service delays only the connects
// that wait for it, never Send, the I/O loop or a group's thread.
//
// The loop posts a request (Request) and goes on; the resolver thread runs
// getaddrinfo and posts the result, then calls `wake` so that the loop
// collects it (TakeResults). Requests are served one at a time, in order:
// a name that takes long delays the names behind it, not the I/O. The
// thread starts with the first request (a cluster given by addresses only
// never has one).
//
// Stop cannot interrupt a getaddrinfo in progress, so the thread is
// detached and owns the shared state with this object: once Stop returns,
// `wake` is never called again and the thread ends when its current
// resolution does.
//
// Thread safety: every method may be called from any thread.
#ifndef CHORUS_NODE_TCP_RESOLVER_H_
#define CHORUS_NODE_TCP_RESOLVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "node/socket_util.h"

namespace chorus {
namespace tcp {

class Resolver {
 public:
  struct Result {
    uint64_t key = 0;  // the request's
    Status status;     // ResolveTcp's
    std::vector<SockAddr> addrs;
  };

  // `wake` is called, on the resolver thread and under its lock, whenever a
  // result is ready; it must be quick and must not call back into this
  // object.
  explicit Resolver(std::function<void()> wake);
  ~Resolver();  // Stop()
  Resolver(const Resolver&) = delete;
  Resolver& operator=(const Resolver&) = delete;

  // Asks for host:port's addresses; the result comes back with `key`
  // (TakeResults). Stopped after Stop; IOError when the thread cannot be
  // started; nothing is queued then.
  Status Request(uint64_t key, const std::string& host, uint16_t port);

  // The results ready since the last call.
  std::vector<Result> TakeResults();

  // Drops the pending requests; `wake` is not called again. Idempotent.
  void Stop();

 private:
  struct State;
  // The thread's body; it shares `state` with this object.
  static void Run(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

}  // namespace tcp
}  // namespace chorus

#endif  // CHORUS_NODE_TCP_RESOLVER_H_
