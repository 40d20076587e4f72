// What one encode gave one parameter tensor, for codecs that select per tensor: the
// numbers behind per-layer compression (AdaComp's convolutional vs fully connected split).
#pragma once

#include <cstdint>

namespace gradwire {

/// What the last encode() gave one parameter tensor of the codec's layout
/// (CodecContext::layers): the elements it carried and the payload bytes they took, the
/// payload's own header left out (a sparsifier's indices and values of that tensor, plus any
/// per-tensor fields such as AdaComp's count and scale).
struct TensorSend {
  std::int64_t sent = 0;
  double bytes = 0;
};

}  // namespace gradwire
