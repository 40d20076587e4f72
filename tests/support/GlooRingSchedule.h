// gloo's ring all-reduce (gloo/allreduce.cc, `ring`, the algorithm torch.distributed's gloo
// backend runs for a CPU all_reduce), as a message schedule over simulated hosts: the same
// segments, in the same order, to the same neighbours, with the same two operations in flight.
// The emulator's tests compare a real gloo all_reduce through `gradwire emulate` with this
// schedule through the simulator, so both carry the same bytes in the same pattern.
//
// The buffer is cut into S segments, S = the smallest multiple of n that is at least
// max(ceil(bytes / 1 MiB), 2n) (gloo's default largest segment is 1 MiB). Rank r sends to
// r - 1 and receives from r + 1. Reduce-scatter and then all-gather each run S - S/n
// iterations; iteration i sends one segment, and from i = 2 on it first waits until the
// segment received at iteration i - 2 is in (gloo's waitRecv), so at most two segments are
// in flight each way. The all-gather starts once the reduce-scatter's last receive is in.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nodes/transport/Endpoint.h"
#include "nodes/transport/Message.h"

namespace gradwire::testing {

class GlooRingSchedule {
 public:
  static constexpr std::int64_t kMaxSegmentBytes = 1 << 20;

  /// `done(rank)` runs when rank's all-reduce is complete.
  GlooRingSchedule(std::vector<Endpoint*> hosts, std::int64_t bytes,
                   std::function<void(int rank)> done)
      : hosts_(std::move(hosts)), bytes_(bytes), done_(std::move(done)) {
    const auto n = static_cast<std::int64_t>(hosts_.size());
    const std::int64_t wanted = std::max((bytes_ + kMaxSegmentBytes - 1) / kMaxSegmentBytes, 2 * n);
    segments_ = (wanted + n - 1) / n * n;
    per_rank_ = segments_ / n;
    segment_bytes_ = ((bytes_ + segments_ - 1) / segments_ + 3) / 4 * 4;
    const auto iterations = static_cast<std::size_t>(segments_ - per_rank_);
    for (std::size_t r = 0; r < hosts_.size(); ++r) {
      ranks_.push_back(std::make_unique<Rank>());
      ranks_.back()->scatter_in.assign(iterations, false);
      ranks_.back()->gather_in.assign(iterations, false);
      const int rank = static_cast<int>(r);
      hosts_[r]->SetHandler([this, rank](Message&& m) {
        Rank& s = *ranks_[static_cast<std::size_t>(rank)];
        (m.kind == kReduceScatter ? s.scatter_in : s.gather_in).at(m.round) = true;
        advance(rank);
      });
    }
  }

  /// Starts rank `rank`'s all-reduce now.
  void start(int rank) {
    Rank& s = *ranks_.at(static_cast<std::size_t>(rank));
    s.started = true;
    advance(rank);
  }

  std::int64_t segments() const { return segments_; }

 private:
  enum : std::uint32_t { kReduceScatter = 1, kAllGather = 2 };
  struct Rank {
    bool started = false;
    bool finished = false;
    std::int64_t scatter_sent = 0;  // iterations whose send was issued
    std::int64_t gather_sent = 0;
    std::vector<bool> scatter_in;   // per iteration: its segment arrived
    std::vector<bool> gather_in;
  };

  /// Length of the segment at `index` (the last ones may be short or empty).
  std::int64_t length(std::int64_t index) const {
    const std::int64_t offset = (index % segments_) * segment_bytes_;
    return std::max<std::int64_t>(0, std::min(segment_bytes_, bytes_ - offset));
  }

  /// Segment index rank `rank` receives (or, with `receive` false, sends) at iteration `i`.
  std::int64_t index_of(bool scatter, int rank, std::int64_t i, bool receive) const {
    const std::int64_t first = scatter ? rank + (receive ? 2 : 1) : rank + (receive ? 1 : 0);
    return (first * per_rank_ + i) % segments_;
  }

  /// Whether what rank `rank` receives at iteration `i` is in (an empty segment is not sent).
  bool arrived(const Rank& s, int rank, bool scatter, std::int64_t i) const {
    if (length(index_of(scatter, rank, i, true)) <= 0) return true;
    return (scatter ? s.scatter_in : s.gather_in)[static_cast<std::size_t>(i)];
  }

  /// Runs one phase's loop as far as the arrivals allow; true when the phase is complete.
  bool run_phase(int rank, bool scatter) {
    Rank& s = *ranks_[static_cast<std::size_t>(rank)];
    std::int64_t& sent = scatter ? s.scatter_sent : s.gather_sent;
    const std::int64_t iterations = segments_ - per_rank_;
    while (sent < iterations && (sent < 2 || arrived(s, rank, scatter, sent - 2))) {
      send(rank, scatter, sent++);
    }
    if (sent < iterations) return false;
    for (std::int64_t i = std::max<std::int64_t>(0, iterations - 2); i < iterations; ++i) {
      if (!arrived(s, rank, scatter, i)) return false;
    }
    return true;
  }

  /// Issues every send the schedule allows now; finishes the rank when it can.
  void advance(int rank) {
    Rank& s = *ranks_[static_cast<std::size_t>(rank)];
    if (!s.started || s.finished) return;
    if (!run_phase(rank, true) || !run_phase(rank, false)) return;
    s.finished = true;
    done_(rank);
  }

  void send(int rank, bool scatter, std::int64_t i) {
    const std::int64_t bytes = length(index_of(scatter, rank, i, false));
    if (bytes <= 0) return;
    const auto n = static_cast<int>(hosts_.size());
    Message m;
    m.kind = scatter ? kReduceScatter : kAllGather;
    m.round = static_cast<std::uint32_t>(i);
    m.payload.assign(static_cast<std::size_t>(bytes), 0);
    hosts_[static_cast<std::size_t>(rank)]->Send(static_cast<std::uint32_t>((rank + n - 1) % n),
                                                 std::move(m));
  }

  std::vector<Endpoint*> hosts_;
  std::int64_t bytes_;
  std::function<void(int)> done_;
  std::int64_t segments_ = 0;
  std::int64_t per_rank_ = 0;
  std::int64_t segment_bytes_ = 0;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace gradwire::testing
