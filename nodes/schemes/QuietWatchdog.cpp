#include "nodes/schemes/QuietWatchdog.h"

#include <memory>
#include <stdexcept>

#include <ns3/simulator.h>

namespace gradwire {

namespace {

struct Watch {
  double period_s;
  QuietWatchdog::Probe probe;
  std::function<std::string()> stalled;
  int quiet = 0;
};

void arm(const std::shared_ptr<Watch>& watch) {
  ns3::Simulator::Schedule(ns3::Seconds(watch->period_s), [watch] {
    const QuietWatchdog::Check found = watch->probe();
    if (found == QuietWatchdog::Check::kDone) return;
    watch->quiet = found == QuietWatchdog::Check::kQuiet ? watch->quiet + 1 : 0;
    if (watch->quiet >= QuietWatchdog::kMaxQuietChecks) throw std::runtime_error(watch->stalled());
    arm(watch);
  });
}

}  // namespace

void QuietWatchdog::start(double period_s, Probe probe, std::function<std::string()> stalled) {
  arm(std::make_shared<Watch>(Watch{period_s, std::move(probe), std::move(stalled)}));
}

}  // namespace gradwire
