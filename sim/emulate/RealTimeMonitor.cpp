#include "sim/emulate/RealTimeMonitor.h"

#include <algorithm>

#include <ns3/realtime-simulator-impl.h>
#include <ns3/simulator.h>

namespace gradwire {

RealTimeMonitor::RealTimeMonitor(double period_s, double max_lag_s,
                                 std::function<void(double, double)> on_exceeded)
    : period_s_(period_s), max_lag_s_(max_lag_s), on_exceeded_(std::move(on_exceeded)) {}

void RealTimeMonitor::Start() {
  ns3::Simulator::Schedule(ns3::Seconds(0), &RealTimeMonitor::Sample, this);
}

void RealTimeMonitor::Sample() {
  const double simulated = ns3::Simulator::Now().GetSeconds();
  // The real-time simulator's own wall clock, whose origin is the moment Run started (a first
  // sample of ours may run late, behind the events the network scheduled at time zero).
  const auto impl = ns3::DynamicCast<ns3::RealtimeSimulatorImpl>(ns3::Simulator::GetImplementation());
  const double wall = impl ? impl->RealtimeNow().GetSeconds() : simulated;
  const double lag = std::max(0.0, wall - simulated);
  lags_s_.push_back(static_cast<float>(lag));
  sum_s_ += lag;
  if (lag > max_s_) {
    max_s_ = lag;
    max_at_s_ = simulated;
  }
  if (lag > max_lag_s_ && !exceeded_) {
    exceeded_ = true;
    if (on_exceeded_) on_exceeded_(lag, simulated);
    ns3::Simulator::Stop();
    return;
  }
  ns3::Simulator::Schedule(ns3::Seconds(period_s_), &RealTimeMonitor::Sample, this);
}

LagStatistics RealTimeMonitor::statistics() const {
  LagStatistics s;
  s.samples = lags_s_.size();
  if (s.samples == 0) return s;
  s.max_s = max_s_;
  s.max_at_s = max_at_s_;
  s.mean_s = sum_s_ / static_cast<double>(s.samples);
  s.behind_fraction =
      static_cast<double>(std::count_if(lags_s_.begin(), lags_s_.end(),
                                        [](float lag) { return lag > kBehindS; })) /
      static_cast<double>(s.samples);
  std::vector<float> sorted(lags_s_);
  const std::size_t rank = std::min(sorted.size() - 1, sorted.size() * 99 / 100);
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(rank), sorted.end());
  s.p99_s = sorted[rank];
  return s;
}

}  // namespace gradwire
