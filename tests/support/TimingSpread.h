// Test support: a collective's simulated time as a distribution over start-time jitter. Under
// heavy incast a drop-tail port's losses, and whether a 200 ms retransmission timeout fires,
// change with sub-microsecond shifts of when the workers start, in per-frame simulation and
// with offload alike; there one run says little, and two simulations compare as
// distributions: the runs without a timeout (their mean, spread and range) and how many had one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "CollectiveTiming.h"
#include "RetransmissionTimeouts.h"

namespace gradwire::testing {

/// Each worker's start time, uniform in [0, jitter_s), drawn from `seed`.
inline std::vector<double> jittered_starts(int workers, double jitter_s, std::uint64_t seed) {
  if (jitter_s <= 0) return {};
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> offset(0, jitter_s);
  std::vector<double> starts;
  for (int r = 0; r < workers; ++r) starts.push_back(offset(random));
  return starts;
}

struct TimingSpread {
  double mean = 0, sd = 0, min = 0, max = 0;  ///< over the runs without a timeout
  int runs = 0;
  int timeouts = 0;  ///< runs in which a retransmission timeout fired
  double last_s = 0;       ///< the latest run's simulated time
  double last_wall_s = 0;  ///< and its wall time

  void add(double simulated_s, bool timed_out) {
    ++runs;
    last_s = simulated_s;
    if (timed_out) ++timeouts;
    else clean_.push_back(simulated_s);
    if (clean_.empty()) return;
    min = *std::min_element(clean_.begin(), clean_.end());
    max = *std::max_element(clean_.begin(), clean_.end());
    const double n = static_cast<double>(clean_.size());
    mean = 0;
    for (const double t : clean_) mean += t / n;
    double squares = 0;
    for (const double t : clean_) squares += (t - mean) * (t - mean);
    sd = clean_.size() > 1 ? std::sqrt(squares / (n - 1)) : 0;
  }
  std::string describe() const {
    char line[96];
    std::snprintf(line, sizeof line, "%.6f %.6f [%.6f %.6f] %2d/%-2d", mean, sd, min, max,
                  timeouts, runs);
    return line;
  }

 private:
  std::vector<double> clean_;
};

/// One run of `time_collective` with jittered starts, noting whether a timeout fired;
/// `before_run` as there.
inline void time_with_jitter(TimingSpread& spread, const std::string& kind, int workers,
                             std::int64_t bytes, const EthernetConfig& config, double jitter_s,
                             std::uint64_t seed, const std::function<void()>& before_run = {}) {
  RetransmissionTimeouts timeouts;
  const auto timing = time_collective(kind, workers, bytes, config,
                                      jittered_starts(workers, jitter_s, seed), [&] {
                                        if (before_run) before_run();
                                        // Every worker has opened its connections.
                                        timeouts.listen_from(jitter_s + 1e-6);
                                      });
  spread.add(timing.simulated_s, timeouts.fired() > 0);
  spread.last_wall_s = timing.wall_s;
}

}  // namespace gradwire::testing
