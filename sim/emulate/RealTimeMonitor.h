// How far ns-3 runs behind the wall clock. The real-time simulator (best effort) runs each
// event no earlier than its simulated instant, but when events take longer than the time
// they cover it falls behind, and the emulated network is then slower than the one simulated.
// A periodic event compares its simulated instant with the simulator's real-time clock (wall
// time since Run began); the lag is the difference. Past the limit the simulation is stopped.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

namespace gradwire {

struct LagStatistics {
  std::size_t samples = 0;
  double max_s = 0;
  double p99_s = 0;
  double mean_s = 0;
  double max_at_s = 0;  ///< simulated instant of the largest lag
  /// Fraction of samples more than kBehindS late. A bounded lag can still mean that ns-3 is
  /// the bottleneck: a TCP flow it cannot carry is clocked by it, so the lag settles at some
  /// ms instead of growing. A network ns-3 sustains leaves it waiting for the wall clock
  /// nearly always.
  double behind_fraction = 0;
};

/// The lag above which a sample counts as "behind".
constexpr double kBehindS = 0.001;

class RealTimeMonitor {
 public:
  /// `period_s`: simulated seconds between samples; `max_lag_s`: the limit; `on_exceeded`
  /// (lag, simulated instant) is called once, in the simulation thread, before it stops.
  RealTimeMonitor(double period_s, double max_lag_s,
                  std::function<void(double, double)> on_exceeded);

  /// Schedules the first sample at the current simulated instant. Before Simulator::Run.
  void Start();

  LagStatistics statistics() const;
  bool exceeded() const { return exceeded_; }

 private:
  void Sample();

  double period_s_;
  double max_lag_s_;
  std::function<void(double, double)> on_exceeded_;
  bool exceeded_ = false;
  std::vector<float> lags_s_;
  double max_s_ = 0;
  double max_at_s_ = 0;
  double sum_s_ = 0;
};

}  // namespace gradwire
