// Where a synchronous parameter server's step goes, per training step: pushing (from the
// first worker handing its gradient to the collective until the server holds every push:
// the encoding, the uplinks and their contention) and pulling (from then until the last
// worker holds the result: the server's aggregation and the downlinks). On a shared radio
// channel the two carry the same bytes, so their difference is what the uplinks' contention
// costs. Every exchange round of a multi-round codec and every gradient bucket adds its own
// push and pull, so with several buckets whose transfers overlap the sum can exceed the step.
// The metrics recorder reads a step's phases when it writes the step's line.
#pragma once

#include <cstdint>
#include <map>

namespace gradwire {

class PhaseLedger {
 public:
  struct Phases {
    double push_s = 0;
    double pull_s = 0;
  };

  void add_push(std::int64_t step, double seconds) { steps_[step].push_s += seconds; }
  void add_pull(std::int64_t step, double seconds) { steps_[step].pull_s += seconds; }

  /// Step `step`'s phases, or null when no exchange of it was timed.
  const Phases* find(std::int64_t step) const {
    const auto it = steps_.find(step);
    return it == steps_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::int64_t, Phases> steps_;
};

}  // namespace gradwire
