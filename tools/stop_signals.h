// BlockStopSignals / WaitForStopSignal: how chorus's programs (the samples,
// the cluster benches) stop on SIGINT or SIGTERM: the main thread blocks
// both before any other thread exists, so that every thread inherits the
// mask, and later takes them with sigwait, outside any signal handler.
//
// Header-only and for programs only: the library never touches signals.
#ifndef CHORUS_TOOLS_STOP_SIGNALS_H_
#define CHORUS_TOOLS_STOP_SIGNALS_H_

#include <signal.h>

namespace chorus {

// Blocks SIGINT and SIGTERM in the calling thread and returns that set.
// REQUIRES: no other thread started yet (they would not inherit the mask).
inline sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

// Waits until one of `stop_signals` arrives; returns it.
inline int WaitForStopSignal(const sigset_t& stop_signals) {
  int sig = 0;
  sigwait(&stop_signals, &sig);
  return sig;
}

}  // namespace chorus

#endif  // CHORUS_TOOLS_STOP_SIGNALS_H_
