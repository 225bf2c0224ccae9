#include "bench/thread_clients.h"

#include <algorithm>
#include <string>
#include <thread>

namespace chorus {
namespace bench {

namespace {

using Clock = std::chrono::steady_clock;

void RunClient(Node* node, const ThreadClientsConfig& config, int index, Clock::time_point end,
               ClientResult* out) {
  const std::string value(config.value_size, static_cast<char>('a' + index % 26));
  out->latencies_us.reserve(1 << 16);
  uint32_t group = static_cast<uint32_t>(index % config.groups);
  while (Clock::now() < end) {
    uint64_t instance = 0;
    uint32_t batch_index = 0;
    const auto start = Clock::now();
    Status s = config.reads   ? node->ReadBarrier(group, &instance)
               : config.batch ? node->BatchPropose(group, value, &instance, &batch_index)
                              : node->Propose(group, value, &instance);
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    if (s.ok()) {
      out->latencies_us.push_back(static_cast<uint32_t>(std::min<int64_t>(us, UINT32_MAX)));
    } else {
      ++out->failures[Status::CodeName(s.code())];
      if (s.IsStopped()) break;
    }
    group = (group + 1) % static_cast<uint32_t>(config.groups);
  }
}

}  // namespace

std::vector<ClientResult> RunThreadClients(Node* node, const ThreadClientsConfig& config,
                                           Clock::time_point end) {
  std::vector<ClientResult> results(static_cast<size_t>(config.count));
  std::vector<std::thread> threads;
  for (int i = 0; i < config.count; ++i) {
    threads.emplace_back(RunClient, node, std::cref(config), config.first + i, end,
                         &results[static_cast<size_t>(i)]);
  }
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace bench
}  // namespace chorus
