#include "nodes/schemes/Participation.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/SplitMix64.h"

namespace gradwire {

namespace {

std::uint64_t next_u64(std::uint64_t& state) { return splitmix64_next(state); }

/// A uniform integer in [0, n) without modulo bias (rejection of the short last block).
std::uint64_t below(std::uint64_t& state, std::uint64_t n) {
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
  std::uint64_t x = next_u64(state);
  while (x >= limit) x = next_u64(state);
  return x % n;
}

}  // namespace

Participation::Participation(ParticipationOptions options, Availability availability)
    : options_(options), availability_(std::move(availability)) {
  if (options_.clients_per_round < 0 || options_.clients_per_round > workers()) {
    throw std::invalid_argument("Participation: clients_per_round must lie in [0, workers]");
  }
  if (options_.deadline_s < 0) throw std::invalid_argument("Participation: deadline < 0");
}

void Participation::set_round_steps(std::int64_t steps) {
  if (steps < 1) throw std::invalid_argument("Participation: a round needs at least one step");
  if (!rounds_.empty()) {
    throw std::logic_error("Participation: round steps set after a round began");
  }
  round_steps_ = steps;
}

std::vector<int> Participation::sample(std::uint64_t seed, std::int64_t round,
                                       const std::vector<int>& available, int k) {
  if (k <= 0 || static_cast<std::size_t>(k) >= available.size()) return available;
  std::uint64_t state = seed * 0xA24BAED4963EE407ull +
                        static_cast<std::uint64_t>(round + 1) * 0x9FB21C651E98DF25ull;
  // Partial Fisher-Yates: the first k positions are a uniform k-subset.
  std::vector<int> pool = available;
  for (std::size_t i = 0; i < static_cast<std::size_t>(k); ++i) {
    const std::size_t j = i + static_cast<std::size_t>(below(state, pool.size() - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(static_cast<std::size_t>(k));
  std::sort(pool.begin(), pool.end());
  return pool;
}

const std::vector<int>& Participation::participants(std::int64_t round, double now_s) {
  auto it = rounds_.find(round);
  if (it != rounds_.end()) return it->second.sampled;
  std::vector<int> available;
  for (int r = 0; r < workers(); ++r) {
    if (availability_.available(r, now_s)) available.push_back(r);
  }
  Round& x = rounds_[round];
  x.start_s = now_s;
  x.sampled = sample(options_.seed, round, available, options_.clients_per_round);
  return x.sampled;
}

const Participation::Round& Participation::at(std::int64_t round) const {
  const auto it = rounds_.find(round);
  if (it == rounds_.end()) {
    throw std::logic_error("Participation: round " + std::to_string(round) + " has not started");
  }
  return it->second;
}

double Participation::round_start_s(std::int64_t round) const { return at(round).start_s; }

double Participation::deadline_at(std::int64_t round) const {
  return has_deadline() ? at(round).start_s + options_.deadline_s
                        : std::numeric_limits<double>::infinity();
}

bool Participation::sampled(std::int64_t round, int rank) const {
  const auto it = rounds_.find(round);
  if (it == rounds_.end()) return false;
  const std::vector<int>& s = it->second.sampled;
  return std::binary_search(s.begin(), s.end(), rank);
}

bool Participation::still_available(std::int64_t round, int rank, double now_s) const {
  return availability_.available_throughout(rank, at(round).start_s, now_s);
}

bool Participation::counts(std::int64_t round, int rank, double arrival_s) const {
  return sampled(round, rank) && arrival_s <= deadline_at(round) &&
         still_available(round, rank, arrival_s);
}

void Participation::record_outcome(std::int64_t round, std::vector<int> applied, double end_s) {
  auto it = rounds_.find(round);
  if (it == rounds_.end()) throw std::logic_error("Participation: outcome of a round not started");
  it->second.ended = true;
  it->second.applied = std::move(applied);
  it->second.end_s = end_s;
}

const std::vector<int>* Participation::applied(std::int64_t round) const {
  const auto it = rounds_.find(round);
  return it != rounds_.end() && it->second.ended ? &it->second.applied : nullptr;
}

}  // namespace gradwire
