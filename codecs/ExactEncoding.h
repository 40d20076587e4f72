// Lossless encoding of an arbitrary flat float32 tensor in whichever existing wire format is
// smaller: sparse (the topk format carrying every non-zero entry) or dense (the `none`
// format). The parameter server uses it for its downlink, where the aggregate of sparse
// uplinks is often itself sparse but must arrive bit-exact.
#pragma once

#include <cstdint>

#include "codecs/Codec.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

/// Encodes `values` (contiguous 1-D float32 CPU) bit-exactly: every element whose bit pattern
/// is not +0.0 is kept (so -0.0 and NaN survive). Picks the sparse form when its payload
/// (16 + 8 nnz bytes) is strictly smaller than the dense one (12 + 4 n), else dense. Tensors
/// over 2^32 elements always go dense (u32 indices). Throws std::invalid_argument on a bad
/// tensor.
Bytes encode_exact(const at::Tensor& values);

/// Decodes a payload in either the `none` or the `topk` format, dispatching on the header's
/// codec id. Throws DecodeError on corrupt bytes or any other codec id. `max_elements` bounds
/// what a sparse header may ask to allocate (see TopKCodec).
at::Tensor decode_any(ByteSpan payload, std::uint64_t max_elements = kMaxPayloadElements);

/// What a lossy transport may lose of a payload from encode_exact: the values of the dense
/// form (they read as zero), nothing of the sparse form (a lost index is not a zero).
LossTolerance exact_loss_tolerance(ByteSpan payload);

}  // namespace gradwire
