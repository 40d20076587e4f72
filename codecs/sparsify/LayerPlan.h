// How a sparsifier walks the flat gradient: one segment per parameter tensor (from
// CodecContext::layers) or, when the layout is unknown or does not tile the gradient, one
// segment for everything.
#pragma once

#include <cstdint>
#include <vector>

#include "codecs/CodecRegistry.h"
#include "codecs/TensorSend.h"

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

/// Per layer of a layout that tiles [0, numel): how many of the `k` sent positions (any
/// order) fall in it, and their share of `bytes` (the payload less its header), in proportion
/// to that count. Empty when the layers do not tile the gradient (an unknown layout).
std::vector<TensorSend> sends_by_layer(const std::vector<LayerSlice>& layers, std::int64_t numel,
                                       const std::uint32_t* positions, std::size_t k, double bytes);

/// True when `plan` has one segment per layer, in the layers' order (what a codec reporting
/// per tensor needs); false for the single segment of an unknown layout.
bool segments_are_layers(const std::vector<Segment>& plan, const std::vector<LayerSlice>& layers);

}  // namespace gradwire
