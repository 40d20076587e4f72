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

/// Simulated times of runs, apart by whether a retransmission timeout fired in them.
class TimingSpread {
 public:
  void add(double simulated_s, bool timed_out) {
    ++runs_;
    if (timed_out) ++timeouts_;
    else clean_.push_back(simulated_s);
  }
  int runs() const { return runs_; }
  int timeouts() const { return timeouts_; }
  /// Over the runs without a timeout (0 when there are none).
  double mean() const {
    double sum = 0;
    for (const double t : clean_) sum += t;
    return clean_.empty() ? 0 : sum / static_cast<double>(clean_.size());
  }
  double sd() const {
    if (clean_.size() < 2) return 0;
    const double m = mean();
    double squares = 0;
    for (const double t : clean_) squares += (t - m) * (t - m);
    return std::sqrt(squares / static_cast<double>(clean_.size() - 1));
  }
  double min() const {
    return clean_.empty() ? 0 : *std::min_element(clean_.begin(), clean_.end());
  }
  double max() const {
    return clean_.empty() ? 0 : *std::max_element(clean_.begin(), clean_.end());
  }
  /// "mean sd [min max] timeouts/runs", in seconds.
  std::string describe() const {
    char line[96];
    std::snprintf(line, sizeof line, "%.6f %.6f [%.6f %.6f] %2d/%-2d", mean(), sd(), min(),
                  max(), timeouts_, runs_);
    return line;
  }

 private:
  std::vector<double> clean_;
  int runs_ = 0;
  int timeouts_ = 0;
};

/// One run of `time_collective` with jittered starts, added to `spread` with whether a
/// timeout fired; `before_run` as there. Returns the run's timing.
inline CollectiveTiming time_with_jitter(TimingSpread& spread, const std::string& kind,
                                         int workers, std::int64_t bytes,
                                         const EthernetConfig& config, double jitter_s,
                                         std::uint64_t seed,
                                         const std::function<void()>& before_run = {}) {
  RetransmissionTimeouts timeouts;
  const auto timing = time_collective(kind, workers, bytes, config,
                                      jittered_starts(workers, jitter_s, seed), [&] {
                                        if (before_run) before_run();
                                        // Every worker has opened its connections.
                                        timeouts.listen_from(jitter_s + 1e-6);
                                      });
  spread.add(timing.simulated_s, timeouts.fired() > 0);
  return timing;
}

}  // namespace gradwire::testing
