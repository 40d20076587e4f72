// The failure detector every fault-aware scheme uses (ring, sync PS, gossip): a party waiting
// for peers checks every `timeout` of simulated time whether it is still waiting and, if no
// progress came, pings the peers it misses (asks the ground truth whether their host is down,
// as a ping that gets no answer would; see Faults.h). The check itself is the scheme's; the
// watchdog owns the schedule and the rule that a party quiet for too long while every missing
// peer is up is a bug, not a slow network: it fails loudly instead of simulating forever.
#pragma once

#include <functional>
#include <string>

namespace gradwire {

class QuietWatchdog {
 public:
  /// What one check found.
  enum class Check {
    kDone,     ///< nothing to wait for any more: stop checking
    kAlive,    ///< progress since the last check, or a missing peer was found down and excluded
    kQuiet,    ///< still waiting, no progress, every missing peer answers
  };
  using Probe = std::function<Check()>;

  /// Consecutive quiet checks after which a party is declared stalled.
  static constexpr int kMaxQuietChecks = 100000;

  /// Runs `probe` every `period_s` of simulated time, starting one period from now, until it
  /// returns kDone. After kMaxQuietChecks consecutive kQuiet answers it throws
  /// std::runtime_error with `stalled()` as the message.
  static void start(double period_s, Probe probe, std::function<std::string()> stalled);
};

}  // namespace gradwire
