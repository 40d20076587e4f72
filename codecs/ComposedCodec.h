// `compose`: any sparsifier's selection, with the selected values passed through any value
// quantiser. `topk_natural` is compose(top-k, natural dithering) with error feedback: the
// biased compressor of Beznosikov, Horvath, Richtarik, Safaryan, "On Biased Compression for
// Distributed Learning" (2020), Sec. 6, which beat the other compressors in their experiments.
//
// Per encode: the select codec encodes the gradient and its payload is decoded back; the
// positions whose decoded value is not +0.0 are the selection (a selected exact +0.0 is
// dropped -- it decodes to 0 either way), and their decoded values, as a k-element tensor, are
// encoded by the quantise codec. So any registered sparsifier (stateful ones included: DGC's
// momentum, ...) and any quantiser combine without new code.
//
// Wire format (codec id 19): header (n), u32 k (<= n), u8 index width w (the bits of n - 1,
// at least 1), ceil(k w / 8) bytes of bit-packed indices (strictly ascending, each < n), then
// the quantiser's complete payload for the k values (its own header, element count == k).
// Decoding rejects a nested payload of another codec or another size (DecodeError).
//
// Error feedback belongs around the whole composition ("error_feedback" on the compose
// object): the residual is then gradient - decode(compose payload), covering both what the
// selection dropped and the quantisation error. Not summable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codecs/Codec.h"

namespace gradwire {

class ComposedCodec : public Codec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;

  /// Takes ownership of both (non-null). `name` is what name() reports; it keeps momentum when `select` does ("compose",
  /// "topk_natural"). `max_elements` bounds the n a header may ask decode to allocate (a
  /// payload of a few bytes can state a huge n); the registry sets the gradient length.
  ComposedCodec(std::string name, std::unique_ptr<Codec> select, std::unique_ptr<Codec> quantize,
                std::uint64_t max_elements);
  ~ComposedCodec() override;

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// The stages' work summed. Encode: the select codec's encode and decode, a scan of the
  /// decoded tensor for the selection (4n bytes, one compare each), the k values gathered, the
  /// quantiser's encode of k values, the payload written. Decode: the quantiser's decode of k
  /// values and their scatter into a zero-filled tensor. Sizes and k from the last encode
  /// (before any: k = n, an upper bound).
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  /// State: the select and quantise codecs' states, nested.
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  const Codec& select() const { return *select_; }
  const Codec& quantize() const { return *quantize_; }

 private:
  std::unique_ptr<Codec> select_;
  std::unique_ptr<Codec> quantize_;
  std::uint64_t max_elements_;
  // The last encode's intermediate sizes, for work(): the select payload, the selected count
  // k and the quantiser's payload (0 before any encode).
  std::uint64_t last_select_bytes_ = 0;
  std::uint64_t last_k_ = 0;
  std::uint64_t last_quantized_bytes_ = 0;
  bool last_select_decoded_ = false;  ///< the selection was not top-k format: decoded
};

}  // namespace gradwire
