#include "codecs/sparsify/LayerPlan.h"

#include <algorithm>

namespace gradwire {

std::vector<Segment> plan_segments(const std::vector<LayerSlice>& layers, std::int64_t numel,
                                   bool dense_1d, int unknown_dims) {
  std::vector<const LayerSlice*> sorted;
  for (const auto& l : layers) sorted.push_back(&l);
  std::sort(sorted.begin(), sorted.end(),
            [](const LayerSlice* a, const LayerSlice* b) { return a->offset < b->offset; });
  std::vector<Segment> out;
  std::int64_t next = 0;
  bool tiles = !sorted.empty();
  for (const LayerSlice* l : sorted) {
    const std::int64_t len = l->numel();
    if (l->offset != next || len < 0) {
      tiles = false;
      break;
    }
    if (len > 0) {
      const int dims = static_cast<int>(l->shape.size());
      out.push_back(Segment{l->offset, len, dims, dense_1d && dims < 2});
    }
    next += len;
  }
  if (!tiles || next != numel) {
    out.clear();
    if (numel > 0) out.push_back(Segment{0, numel, unknown_dims, false});
  }
  return out;
}

std::vector<TensorSend> sends_by_layer(const std::vector<LayerSlice>& layers, std::int64_t numel,
                                       const std::uint32_t* positions, std::size_t k, double bytes) {
  std::vector<std::int64_t> starts;  // layer i covers [starts[i], starts[i + 1])
  std::int64_t next = 0;
  for (const LayerSlice& l : layers) {
    if (l.offset != next) return {};
    starts.push_back(next);
    next += l.numel();
  }
  if (layers.empty() || next != numel) return {};
  std::vector<TensorSend> sends(layers.size());
  for (std::size_t j = 0; j < k; ++j) {
    const auto at = std::upper_bound(starts.begin(), starts.end(), static_cast<std::int64_t>(positions[j]));
    ++sends[static_cast<std::size_t>(at - starts.begin()) - 1].sent;
  }
  for (TensorSend& s : sends) {
    s.bytes = k == 0 ? 0.0 : bytes * static_cast<double>(s.sent) / static_cast<double>(k);
  }
  return sends;
}

bool segments_are_layers(const std::vector<Segment>& plan, const std::vector<LayerSlice>& layers) {
  if (plan.size() != layers.size()) return false;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (plan[i].offset != layers[i].offset || plan[i].length != layers[i].numel()) return false;
  }
  return true;
}

}  // namespace gradwire
