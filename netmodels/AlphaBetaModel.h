// The analytic alpha-beta (latency-bandwidth) model of a message: T(S) = alpha + S / beta.
// It is not used to time training: ns-3 does that. It exists to check ns-3's timings against
// textbook bounds (Thakur et al. 2005; Patarasuk & Yuan 2009 for ring all-reduce).
#pragma once

#include <cstddef>

namespace gradwire {

class AlphaBetaModel {
 public:
  /// `alpha_s`: per-message latency in seconds; `beta_bps`: bandwidth in bits per second.
  AlphaBetaModel(double alpha_s, double beta_bps);

  /// Time to move `bytes` over one link.
  double transfer_time(double bytes) const;

  /// Ring all-reduce of `bytes` per worker across `n` workers: 2(n-1) steps, each moving S/n:
  /// 2(n-1) alpha + 2(n-1)/n * S / beta. The bandwidth term is a lower bound for any
  /// implementation that moves every byte through the ring.
  double ring_allreduce_time(double bytes, std::size_t n) const;

  /// Parameter server with a single server link: n pushes of S share the server's downlink
  /// (n S / beta) and n pulls share its uplink: 2 (alpha + n S / beta).
  double parameter_server_time(double bytes, std::size_t n) const;

  double alpha() const { return alpha_; }
  double beta() const { return beta_; }

 private:
  double alpha_;
  double beta_;
};

}  // namespace gradwire
