// When each worker (a client of a federated round) is reachable: a list of available intervals
// per worker in simulated seconds, either given (a trace) or drawn from an on/off model whose
// on and off periods are exponential with given means (the alternating renewal model that
// availability studies of mobile devices fit first). Outside its intervals a worker is
// unavailable: it is not sampled and what it computes does not count.
//
// The on/off model draws each worker's periods from a generator of its own (seed and rank),
// extended lazily as later instants are asked about, so an answer depends only on (seed, rank,
// instant), never on the order of the queries.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace gradwire {

/// One available period [start_s, end_s) of a worker; end_s may be infinity.
struct AvailableInterval {
  double start_s = 0;
  double end_s = std::numeric_limits<double>::infinity();
};

class Availability {
 public:
  /// Every worker available all the time.
  static Availability always(int workers);
  /// Each worker alternates available and unavailable periods, exponential with means
  /// `mean_on_s` and `mean_off_s` (both > 0). A worker starts available with probability
  /// mean_on / (mean_on + mean_off), the model's long-run share, so time 0 is not special.
  static Availability on_off(int workers, double mean_on_s, double mean_off_s, std::uint64_t seed);
  /// Given intervals: `intervals[r]` sorted, non-overlapping; a worker without intervals is
  /// never available.
  static Availability from_intervals(std::vector<std::vector<AvailableInterval>> intervals);

  int workers() const { return static_cast<int>(per_worker_.size()); }
  /// Whether worker `rank` is available at simulated instant `t_s`.
  bool available(int rank, double t_s) const;
  /// Whether worker `rank` is available at every instant of [from_s, to_s].
  bool available_throughout(int rank, double from_s, double to_s) const;
  /// The worker's intervals known so far (the on/off model: those drawn up to the latest query).
  const std::vector<AvailableInterval>& intervals(int rank) const;

 private:
  struct Worker {
    std::vector<AvailableInterval> intervals;
    // On/off model only: the generator's state and where the drawn schedule ends.
    std::uint64_t state = 0;
    double drawn_until_s = std::numeric_limits<double>::infinity();
    bool next_on = false;
  };
  /// Draws the worker's schedule up to past `t_s` (on/off model).
  void extend(Worker& w, double t_s) const;
  /// The interval holding `t_s`, or null.
  const AvailableInterval* interval_at(int rank, double t_s) const;
  double draw_exponential(Worker& w, double mean_s) const;

  mutable std::vector<Worker> per_worker_;
  double mean_on_s_ = 0;
  double mean_off_s_ = 0;
};

}  // namespace gradwire
