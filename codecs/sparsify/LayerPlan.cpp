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

}  // namespace gradwire
