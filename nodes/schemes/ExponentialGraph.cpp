#include "nodes/schemes/ExponentialGraph.h"

#include <algorithm>

namespace gradwire {

int ExponentialGraph::max_peers(int nodes) {
  if (nodes < 2) return 0;
  int l = 0;
  while ((1 << (l + 1)) <= nodes - 1) ++l;  // floor(log2(n - 1))
  return l + 1;
}

ExponentialGraph::ExponentialGraph(int nodes, int peers)
    : nodes_(nodes), levels_(max_peers(nodes)), peers_(0) {
  if (nodes_ < 2) return;
  peers_ = std::clamp(peers, 1, levels_);
}

std::vector<int> ExponentialGraph::out_peers(int node, std::int64_t step) const {
  std::vector<int> out;
  for (int j = 0; j < peers_; ++j) {
    const int shift = 1 << static_cast<int>((step + j) % levels_);
    out.push_back((node + shift) % nodes_);
  }
  return out;
}

std::vector<int> ExponentialGraph::in_peers(int node, std::int64_t step) const {
  std::vector<int> in;
  for (int j = 0; j < peers_; ++j) {
    const int shift = 1 << static_cast<int>((step + j) % levels_);
    in.push_back(((node - shift) % nodes_ + nodes_) % nodes_);
  }
  return in;
}

}  // namespace gradwire
