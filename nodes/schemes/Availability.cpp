#include "nodes/schemes/Availability.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "common/SplitMix64.h"

namespace gradwire {

namespace {

std::uint64_t next_u64(std::uint64_t& state) { return splitmix64_next(state); }
double next_uniform(std::uint64_t& state) { return splitmix64_uniform(state); }

}  // namespace

Availability Availability::always(int workers) {
  Availability a;
  a.per_worker_.resize(static_cast<std::size_t>(workers));
  for (Worker& w : a.per_worker_) w.intervals.push_back(AvailableInterval{});
  return a;
}

Availability Availability::on_off(int workers, double mean_on_s, double mean_off_s,
                                  std::uint64_t seed) {
  if (!(mean_on_s > 0) || !(mean_off_s > 0)) {
    throw std::invalid_argument("Availability::on_off: means must be > 0");
  }
  Availability a;
  a.mean_on_s_ = mean_on_s;
  a.mean_off_s_ = mean_off_s;
  a.per_worker_.resize(static_cast<std::size_t>(workers));
  for (int r = 0; r < workers; ++r) {
    Worker& w = a.per_worker_[static_cast<std::size_t>(r)];
    // A stream per worker: its periods do not depend on how far the others were drawn.
    w.state = seed * 0xD1B54A32D192ED03ull + static_cast<std::uint64_t>(r + 1) * 0xAEF17502108EF2D9ull;
    w.next_on = next_uniform(w.state) < mean_on_s / (mean_on_s + mean_off_s);
    w.drawn_until_s = 0;
  }
  return a;
}

Availability Availability::from_intervals(std::vector<std::vector<AvailableInterval>> intervals) {
  Availability a;
  a.per_worker_.resize(intervals.size());
  for (std::size_t r = 0; r < intervals.size(); ++r) {
    for (std::size_t i = 0; i < intervals[r].size(); ++i) {
      const AvailableInterval& x = intervals[r][i];
      if (!(x.start_s >= 0) || !(x.end_s > x.start_s) ||
          (i > 0 && x.start_s < intervals[r][i - 1].end_s)) {
        throw std::invalid_argument("Availability: intervals must be sorted and disjoint");
      }
    }
    a.per_worker_[r].intervals = std::move(intervals[r]);
  }
  return a;
}

double Availability::draw_exponential(Worker& w, double mean_s) const {
  // Inverse transform; 1 - u lies in (0, 1], so the logarithm is finite.
  return -mean_s * std::log(1.0 - next_uniform(w.state));
}

void Availability::extend(Worker& w, double t_s) const {
  // A period's end counts as unavailable: draw until the schedule covers t_s strictly.
  while (w.drawn_until_s <= t_s) {
    if (w.next_on) {
      const double end = w.drawn_until_s + draw_exponential(w, mean_on_s_);
      if (end > w.drawn_until_s) w.intervals.push_back(AvailableInterval{w.drawn_until_s, end});
      w.drawn_until_s = end;
    } else {
      w.drawn_until_s += draw_exponential(w, mean_off_s_);
    }
    w.next_on = !w.next_on;
  }
}

const AvailableInterval* Availability::interval_at(int rank, double t_s) const {
  Worker& w = per_worker_.at(static_cast<std::size_t>(rank));
  extend(w, t_s);
  // The last interval starting at or before t_s.
  auto it = std::upper_bound(w.intervals.begin(), w.intervals.end(), t_s,
                             [](double t, const AvailableInterval& x) { return t < x.start_s; });
  if (it == w.intervals.begin()) return nullptr;
  --it;
  return t_s < it->end_s ? &*it : nullptr;
}

bool Availability::available(int rank, double t_s) const {
  return interval_at(rank, t_s) != nullptr;
}

bool Availability::available_throughout(int rank, double from_s, double to_s) const {
  const AvailableInterval* x = interval_at(rank, from_s);
  return x != nullptr && to_s < x->end_s;
}

const std::vector<AvailableInterval>& Availability::intervals(int rank) const {
  return per_worker_.at(static_cast<std::size_t>(rank)).intervals;
}

}  // namespace gradwire
