// Who takes part in each synchronous round, and how long a round waits: per-round client
// sampling (k of the workers available when the round starts, drawn with the scenario's seed),
// availability (nodes/schemes/Availability.h), and a deadline after which the round is
// aggregated over whatever arrived (the partial participation of federated averaging,
// McMahan et al., AISTATS 2017; the deadline of Bonawitz et al., "Towards Federated Learning
// at Scale", MLSys 2019).
//
// Contract, for any round-based scheme (the synchronous parameter server uses it; a scheme of
// local steps can use it the same way):
//  - Round r starts at the first call of participants(r, now): the instant the server closes
//    round r - 1 (round 0: when the workers first start). That call fixes the round's clients;
//    later calls return the same set whatever instant they pass. Sampling draws from a
//    generator seeded with (seed, r) only, so a round's clients do not depend on the order of
//    events, and a seeded run repeats bit for bit.
//  - The sampled clients are min(k, available) distinct workers chosen uniformly among those
//    available at the round's start, listed in increasing rank. An empty set is a valid round.
//  - A sampled client's update counts (counts()) only if the client stayed available from the
//    round's start until its update arrived, and it arrived by the deadline. A client that went
//    away meanwhile is dropped from the round: its update is not applied.
//  - With a deadline, the round ends when every sampled client's update has arrived or at
//    round start + deadline, whichever is first; the server aggregates what counted (the mean
//    over the arrivals) and an empty round leaves the model unchanged but still counts as a
//    round. Without a deadline the round waits for every sampled client (only valid when no
//    client can become unavailable).
//  - record_outcome() stores which clients' updates were applied, for metrics.
//  - A round spans round_steps() of the workers' steps: 1 for the parameter server, where
//    every step is a round; H for local-update training (nodes/schemes/LocalSgd.h), where
//    step s belongs to round s / H and the round's update is sent at its last step.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "nodes/schemes/Availability.h"

namespace gradwire {

struct ParticipationOptions {
  int clients_per_round = 0;  ///< k; 0: every available worker
  double deadline_s = 0;      ///< seconds after a round starts; 0: none (wait for every client)
  std::uint64_t seed = 1;     ///< the scenario's seed
};

class Participation {
 public:
  Participation(ParticipationOptions options, Availability availability);

  int workers() const { return availability_.workers(); }
  const ParticipationOptions& options() const { return options_; }
  const Availability& availability() const { return availability_; }
  bool has_deadline() const { return options_.deadline_s > 0; }

  /// The workers' steps per round (1 unless a scheme of local steps sets its H, >= 1).
  void set_round_steps(std::int64_t steps);
  std::int64_t round_steps() const { return round_steps_; }
  /// The round a worker's step (0-based) belongs to.
  std::int64_t round_of_step(std::int64_t step) const { return step / round_steps_; }
  /// Whether the step (0-based) is its round's last, the one that ends with the round's result.
  bool ends_round(std::int64_t step) const { return (step + 1) % round_steps_ == 0; }

  /// Round `round`'s clients (increasing ranks), sampled when the round starts: at the first
  /// call, at `now_s`.
  const std::vector<int>& participants(std::int64_t round, double now_s);
  bool started(std::int64_t round) const { return rounds_.count(round) != 0; }
  /// A started round's clients; std::logic_error if it has not started.
  const std::vector<int>& clients(std::int64_t round) const { return at(round).sampled; }
  /// The instant the round started; std::logic_error if it has not.
  double round_start_s(std::int64_t round) const;
  /// The latest instant the round ends (start + deadline); infinity without a deadline.
  double deadline_at(std::int64_t round) const;
  /// Whether `rank` is among the round's clients (false before the round starts).
  bool sampled(std::int64_t round, int rank) const;
  /// Whether `rank`'s update of `round`, reaching the server at `arrival_s`, is applied: it was
  /// sampled, stayed available from the round's start until arrival_s, and met the deadline.
  bool counts(std::int64_t round, int rank, double arrival_s) const;
  /// Whether `rank` is still available at `now_s` since the round started (it may send).
  bool still_available(std::int64_t round, int rank, double now_s) const;

  /// The ranks whose updates the round applied (increasing), at its end.
  void record_outcome(std::int64_t round, std::vector<int> applied, double end_s);
  /// The round's applied ranks, or null before its outcome is recorded.
  const std::vector<int>* applied(std::int64_t round) const;

  /// Sampling alone: min(k, available.size()) of `available` (increasing ranks), drawn with a
  /// generator seeded by (seed, round); k <= 0 takes them all.
  static std::vector<int> sample(std::uint64_t seed, std::int64_t round,
                                 const std::vector<int>& available, int k);

 private:
  struct Round {
    double start_s = 0;
    std::vector<int> sampled;
    bool ended = false;
    std::vector<int> applied;
    double end_s = 0;
  };
  const Round& at(std::int64_t round) const;

  ParticipationOptions options_;
  Availability availability_;
  std::map<std::int64_t, Round> rounds_;
  std::int64_t round_steps_ = 1;
};

}  // namespace gradwire
