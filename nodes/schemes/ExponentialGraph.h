// The time-varying directed exponential graph of Stochastic Gradient Push (Assran et al.,
// ICML 2019, Sec. 5; facebookresearch/stochastic_gradient_push gossip/graph_manager.py): at
// step t node i sends to i + 2^((t + j) mod L) (mod n) for j = 0..peers-1, with
// L = floor(log2(n - 1)) + 1, and receives from i - 2^((t + j) mod L). Every node has the same
// in- and out-degree, so the mixing matrix is column stochastic.
#pragma once

#include <cstdint>
#include <vector>

namespace gradwire {

class ExponentialGraph {
 public:
  /// `peers` is clamped to [1, L] (more would repeat a peer); n = 1 has no peers.
  /// `peers` is clamped to 1..max_peers(nodes).
  ExponentialGraph(int nodes, int peers);
  /// Distinct out-peers a node has over `nodes` nodes: the shifts 2^0 .. 2^(L-1), with
  /// L = floor(log2(nodes - 1)) + 1 (0 for fewer than 2 nodes).
  static int max_peers(int nodes);

  std::vector<int> out_peers(int node, std::int64_t step) const;
  std::vector<int> in_peers(int node, std::int64_t step) const;
  int peers() const { return peers_; }

 private:
  int nodes_;
  int levels_;  // L
  int peers_;
};

}  // namespace gradwire
