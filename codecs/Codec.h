// The gradient codec interface: tensor -> bytes -> tensor.
//
// Modelled on BytePS's common/compressor/compressor.h (a small interface, a registry, error
// feedback as a decorator) and GRACE's compensate -> compress -> update -> send pipeline.
//
// Ownership and validity:
//  * `encode` reads `grad` (a contiguous 1-D float32 CPU tensor, the worker's flat gradient or a
//    contiguous slice of it) and never modifies it. The returned bytes are owned by the caller.
//    A codec object belongs to one worker: stateful codecs (error feedback, momentum
//    correction) keep that worker's state between calls, so one object must not be shared
//    between workers.
//  * `decode` reads `payload` only for the duration of the call and returns a freshly allocated
//    tensor of the element count stated in the payload header. It validates every length and
//    index and throws DecodeError on anything malformed; it never reads out of bounds.
//  * `accumulate` (summable codecs only) adds `other` into `acc` in the compressed domain, so a
//    ring all-reduce can reduce payloads hop by hop without decoding them.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "codecs/ByteSpan.h"

namespace at {
class Tensor;
}
namespace torch {
using at::Tensor;
}

namespace gradwire {

using Bytes = std::vector<std::uint8_t>;

/// Raised by Codec::decode / accumulate for malformed or mismatched payloads.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// How payloads of different workers are combined. The collectives pick their algorithm from
/// this declaration rather than from the codec's name.
enum class Aggregation {
  kSummable,        ///< payloads add in the compressed domain (dense fp32, fp16, ...)
  kDecodeThenSum,   ///< decode every payload, then add the tensors (top-k, ...)
};

/// Numeric ids written in every payload header (see codecs/README.md). Never renumber.
enum class CodecId : std::uint8_t {
  kDense = 1,
  kTopK = 2,
};

class Codec {
 public:
  virtual ~Codec() = default;

  /// Registry name, e.g. "none", "topk".
  virtual std::string name() const = 0;

  /// Encodes a contiguous 1-D float32 CPU tensor into a self-describing payload.
  virtual Bytes encode(const torch::Tensor& grad) = 0;

  /// Decodes a payload produced by this codec kind; throws DecodeError on corrupt bytes.
  virtual torch::Tensor decode(ByteSpan payload) const = 0;

  virtual Aggregation aggregation() const { return Aggregation::kDecodeThenSum; }

  /// Summable codecs: acc := acc + other, without decoding. Both must describe the same
  /// element count. Throws DecodeError on mismatch, std::logic_error if not summable.
  virtual void accumulate(Bytes& acc, ByteSpan other) const;

  /// Encodes `grad` cut at `bounds` (bounds.front() == 0, bounds.back() == numel, ascending)
  /// into one payload per chunk, as ring reduce-scatter needs. The default encodes each slice
  /// independently; stateful wrappers override it so their state covers the whole gradient.
  virtual std::vector<Bytes> encode_chunks(const torch::Tensor& grad,
                                           const std::vector<std::int64_t>& bounds);
};

}  // namespace gradwire
