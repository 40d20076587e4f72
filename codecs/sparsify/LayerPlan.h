// How a sparsifier walks the flat gradient: one segment per parameter tensor (from
// CodecContext::layers) or, when the layout is unknown or does not tile the gradient, one
// segment for everything.
#pragma once

#include <cstdint>
#include <vector>

#include "codecs/CodecRegistry.h"

namespace gradwire {

struct Segment {
  std::int64_t offset = 0;
  std::int64_t length = 0;
  int dims = 1;         ///< the parameter's number of dimensions (1 for biases / norm scales)
  bool dense = false;   ///< sent whole (DGC: biases and normalisation parameters)
};

/// Segments in offset order. With `dense_1d`, parameters with fewer than two dimensions are
/// marked dense. Layers that do not tile [0, numel) exactly (tools, slices) give one segment
/// of `unknown_dims` dimensions.
std::vector<Segment> plan_segments(const std::vector<LayerSlice>& layers, std::int64_t numel,
                                   bool dense_1d, int unknown_dims = 2);

}  // namespace gradwire
