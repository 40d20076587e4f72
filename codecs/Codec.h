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

#include "codecs/CodecWork.h"
#include "common/ByteSpan.h"
#include "common/DecodeError.h"
#include "common/LossTolerance.h"

#include <c10/core/Device.h>

namespace at {
class Tensor;
}
namespace torch {
using at::Tensor;
}

namespace gradwire {


/// How payloads of different workers are combined. The collectives pick their algorithm from
/// this declaration rather than from the codec's name.
enum class Aggregation {
  kSummable,        ///< payloads add in the compressed domain (dense fp32, fp16, ...)
  kDecodeThenSum,   ///< decode every payload, then add the tensors (top-k, ...)
};

/// Numeric ids written in every payload header (see codecs/README.md). Never renumber.
/// Codecs whose wire format is identical (e.g. several sparsifiers sending indices + values)
/// share one id; the id names the format, not the selection method.
enum class CodecId : std::uint8_t {
  kDense = 1,
  kTopK = 2,  ///< sparse: u32 k, indices, values (also used by other sparsifiers)
  // Reserved for the sparsification family:
  kRandomK = 3,
  kCompactSparse = 4,  ///< sparse with delta/varint or bit-packed indices, fp32/fp16 values
  kAdaComp = 5,
  kZstd = 6,           ///< lossless stage wrapping any payload
  // Reserved for the quantisation family:
  kQsgd = 10,
  kTernGrad = 11,
  kOneBit = 12,
  kSign = 13,
  kScaledSign = 14,
  kNatural = 15,
  kNaturalDithering = 16,
  kFp16 = 17,
  kBf16 = 18,
  kCompose = 19,
  // Reserved for correlation-exploiting codecs:
  kPowerSgd = 30,
  kGradiVeQ = 31,
  kLgc = 32,
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

  /// True when encode() also takes a gradient that lives on an accelerator (a CUDA tensor)
  /// and computes there, so that only the payload crosses to host memory. False: the caller
  /// copies the gradient to the host first (codec_input in codecs/GradientChecks.h). A codec
  /// that says true writes the same bytes from either place (tests/gpu/gpu_test.cpp).
  virtual bool encodes_on_device() const { return false; }

  /// decode(), with the result on `device`. The default decodes on the host and copies the
  /// dense tensor over; codecs whose payload is smaller than the tensor copy the payload's
  /// values and expand them there.
  virtual torch::Tensor decode_to(ByteSpan payload, const c10::Device& device) const;

  virtual Aggregation aggregation() const { return Aggregation::kDecodeThenSum; }

  /// Turns the sum of all `workers` decoded contributions into the update every worker
  /// applies. The default is the mean; majority-vote codecs (signSGD) return sign(sum).
  /// `sum` may be modified in place and returned.
  virtual torch::Tensor finalize(torch::Tensor sum, int workers) const;

  /// Fraction of the gradient's elements the last encode() carried (1 for dense codecs,
  /// k/n for top-k, ...): recorded per step in metrics.jsonl.
  virtual double last_density() const { return 1.0; }

  /// True when the codec keeps gradient momentum itself (DGC's momentum correction): the
  /// optimizer must then not apply momentum a second time.
  virtual bool applies_momentum() const { return false; }

  /// Whether this codec's payloads can be decoded with parts lost on a lossy transport (see
  /// common/LossTolerance.h). The default: no, every byte must arrive.
  virtual LossTolerance loss_tolerance() const { return {}; }

  /// Summable codecs: acc := acc + other, without decoding. Both must describe the same
  /// element count. Throws DecodeError on mismatch, std::logic_error if not summable.
  virtual void accumulate(Bytes& acc, ByteSpan other) const;

  /// Encodes `grad` cut at `bounds` (bounds.front() == 0, bounds.back() == numel, ascending)
  /// into one payload per chunk, as ring reduce-scatter needs. The default encodes each slice
  /// independently; stateful wrappers override it so their state covers the whole gradient.
  /// A codec may move the cuts (GradiVeQ cuts at whole slices) but must return
  /// bounds.size() - 1 payloads that decode to consecutive ranges covering the gradient.
  virtual std::vector<Bytes> encode_chunks(const torch::Tensor& grad,
                                           const std::vector<std::int64_t>& bounds);

  /// Called with the update every worker applies at the end of each synchronous step (and on
  /// the server's instance of a parameter server). Codecs that learn from aggregated
  /// gradients (GradiVeQ fits its basis on them) keep what they need; all workers see the
  /// same update, so what they learn stays identical without extra traffic.
  virtual void observe_aggregate(const torch::Tensor& /*update*/) {}

  /// Serialises this worker's codec state (residual, momentum, step counter, ...) so a tool
  /// can carry it across processes (`gradwire codec encode --state FILE`). Stateless codecs
  /// return no bytes. The format is the codec's own (see codecs/CodecState.h).
  virtual Bytes save_state() const { return {}; }
  /// The work one operation of this codec does, for charging it to a simulated device
  /// (codecs/CodecWork.h). Asked right after the operation ran, so it describes that call with
  /// the codec's state as the call left it. `numel` is the gradient's (encode, decode: the
  /// decoded tensor's; accumulate: the payloads' stated count), `payload_bytes` the payload's
  /// size (encode: what it returned; decode: what it read; accumulate: one payload's).
  /// The default, right for a codec that streams the gradient once:
  ///   encode:     read 4n bytes, write the payload
  ///   decode:     read the payload, write 4n bytes
  ///   accumulate: read two payloads, write one; one add per element
  ///   finalize:   one pass in place over the sum (read and write 4n), one divide per element
  ///   round, observe: nothing (single-round codecs learn nothing from the update)
  /// Codecs that make more passes, select, sample or multiply matrices override it.
  virtual CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const;

  /// Restores what save_state() wrote (empty: the initial state). Throws DecodeError on
  /// malformed or mismatched state. Stateless codecs accept only empty state.
  virtual void load_state(ByteSpan state) {
    if (state.size != 0) throw DecodeError("codec '" + name() + "' keeps no state to load");
  }
};

}  // namespace gradwire
