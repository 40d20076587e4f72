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
#include <utility>
#include <vector>

#include "codecs/CodecTraits.h"
#include "codecs/CodecWork.h"
#include "codecs/TensorSend.h"
#include "common/ByteSpan.h"
#include "common/DecodeError.h"

// Declared, not included: the interface passes tensors by reference and value only, and
// ATen's Tensor header is the costliest part of compiling every file that registers or
// selects a codec. Files that work on tensors include <ATen/core/Tensor.h> themselves.
namespace at {
class Tensor;
}  // namespace at
namespace c10 {
struct Device;
}  // namespace c10

namespace gradwire {

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

/// What a codec is (its name, how payloads combine, where it encodes, ...) is its CodecTraits,
/// declared when it is made; the virtual functions below are what it does, step by step.
class Codec {
 public:
  explicit Codec(CodecTraits traits) : traits_(std::move(traits)) {}
  virtual ~Codec() = default;

  const CodecTraits& traits() const { return traits_; }
  /// Registry name, e.g. "none", "topk" (traits().name).
  const std::string& name() const { return traits_.name; }

  /// Fraction of the gradient's elements the last encode() carried (1 for dense codecs,
  /// k/n for top-k, ...): recorded per step in metrics.jsonl. A decorator reports its inner
  /// codec's.
  double last_density() const {
    return density_of_ != nullptr ? density_of_->last_density() : last_density_;
  }

  /// Per parameter tensor of the layout, in its order: what the last encode() sent of each
  /// (recorded per step in metrics.jsonl and summed in summary.json). Empty when the codec
  /// does not select per tensor or the layout does not tile the encoded gradient. A
  /// decorator reports its inner codec's.
  const std::vector<TensorSend>& last_tensor_sends() const {
    return density_of_ != nullptr ? density_of_->last_tensor_sends() : last_tensor_sends_;
  }

  /// Encodes a contiguous 1-D float32 CPU tensor into a self-describing payload (also a tensor
  /// on an accelerator when traits().encodes_on_device).
  virtual Bytes encode(const at::Tensor& grad) = 0;

  /// Decodes a payload produced by this codec kind; throws DecodeError on corrupt bytes.
  virtual at::Tensor decode(ByteSpan payload) const = 0;

  /// decode(), with the result on `device`. The default decodes on the host and copies the
  /// dense tensor over; codecs whose payload is smaller than the tensor copy the payload's
  /// values and expand them there.
  virtual at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const;

  /// Turns the sum of all `workers` decoded contributions into the update every worker
  /// applies. The default is the mean; majority-vote codecs (signSGD) return sign(sum).
  /// `sum` may be modified in place and returned.
  virtual at::Tensor finalize(at::Tensor sum, int workers) const;

  /// Summable codecs: acc := acc + other, without decoding. Both must describe the same
  /// element count. Throws DecodeError on mismatch, std::logic_error if not summable.
  virtual void accumulate(Bytes& acc, ByteSpan other) const;

  /// Encodes `grad` cut at `bounds` (bounds.front() == 0, bounds.back() == numel, ascending)
  /// into one payload per chunk, as ring reduce-scatter needs. The default encodes each slice
  /// independently; stateful wrappers override it so their state covers the whole gradient.
  /// A codec may move the cuts (GradiVeQ cuts at whole slices) but must return
  /// bounds.size() - 1 payloads that decode to consecutive ranges covering the gradient.
  virtual std::vector<Bytes> encode_chunks(const at::Tensor& grad,
                                           const std::vector<std::int64_t>& bounds);

  /// Called with the update every worker applies at the end of each synchronous step (and on
  /// the server's instance of a parameter server). Codecs that learn from aggregated
  /// gradients (GradiVeQ fits its basis on them) keep what they need; all workers see the
  /// same update, so what they learn stays identical without extra traffic.
  virtual void observe_aggregate(const at::Tensor& /*update*/) {}

  /// Serialises this worker's codec state (residual, momentum, step counter, ...) so a tool
  /// can carry it across processes (`gradwire codec encode --state FILE`). Stateless codecs
  /// return no bytes. The format is the codec's own (see codecs/CodecState.h).
  virtual Bytes save_state() const { return {}; }
  /// Restores what save_state() wrote (empty: the initial state). Throws DecodeError on
  /// malformed or mismatched state. Stateless codecs accept only empty state.
  virtual void load_state(ByteSpan state) {
    if (state.size != 0) throw DecodeError("codec '" + name() + "' keeps no state to load");
  }

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

 protected:
  /// A decorator around `inner`: `traits` derived from inner.traits(), and last_density()
  /// read from `inner`, which must live as long as the decorator.
  Codec(CodecTraits traits, const Codec& inner)
      : traits_(std::move(traits)), density_of_(&inner) {}

  /// What the encode that just ran carried (codecs that send part of the gradient).
  void set_last_density(double density) { last_density_ = density; }
  /// What the encode that just ran sent of each tensor (codecs that select per tensor).
  void set_last_tensor_sends(std::vector<TensorSend> sends) { last_tensor_sends_ = std::move(sends); }

 private:
  CodecTraits traits_;
  double last_density_ = 1.0;
  std::vector<TensorSend> last_tensor_sends_;
  const Codec* density_of_ = nullptr;
};

}  // namespace gradwire
