// Bucketed stochastic quantisation onto a fixed set of levels relative to a norm: the engine
// behind `qsgd` (uniform levels) and `natural_dithering` (power-of-two levels). Both send, per
// bucket of `bucket` consecutive elements, the bucket's norm as float32 and, per element, a
// sign bit and a level index packed at ceil(log2(s + 1)) bits. Rounding between the two
// levels around |x| / norm is stochastic with the probabilities that make it unbiased:
// E[decode(encode(x))] = x.
//
//  * uniform (QSGD, Alistarh et al., NeurIPS 2017, Sec. 3.1): levels l / s, l = 0..s;
//    x_i -> norm * sign(x_i) * xi_i / s with xi_i = l + Bernoulli(t - l), t = s |x_i| / norm.
//    With the L2 norm, Lemma 3.1 bounds the variance: E||Q(v) - v||^2 <= min(d / s^2,
//    sqrt(d) / s) ||v||^2 for a bucket of d elements.
//  * power of two (natural dithering, Horvath et al., "Natural compression for distributed
//    deep learning", 2019, Sec. 4): levels 0, 2^(1-s), 2^(2-s), ..., 1/2, 1; between two
//    neighbours the rounding is linear (standard dithering), so it stays unbiased. Any
//    L_p norm works; we offer L2 and L_inf.
//
// Stateless apart from the dither stream; not summable (each worker's norms differ).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "codecs/Codec.h"
#include "codecs/quantize/QuantizerSupport.h"

namespace gradwire {

class LevelQuantizer : public Codec {
 public:
  enum class Levels { kUniform, kPowerOfTwo };
  enum class Norm { kL2, kLinf };

  static constexpr std::uint8_t kFormatVersion = 1;
  /// Largest level count either scheme accepts (uniform: 2^16 - 1, 17-bit codes; powers of
  /// two: 64, below which 2^(1-s) is still a normal float).
  static std::uint32_t max_levels(Levels levels) { return levels == Levels::kUniform ? 65535u : 64u; }

  /// `levels` s >= 1 (std::invalid_argument above max_levels); `bucket` elements per norm
  /// (0: the whole encoded tensor is one bucket).
  LevelQuantizer(Levels scheme, std::uint32_t levels, std::uint32_t bucket, Norm norm,
                 std::uint64_t seed, int rank);

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// qsgd: the payload's codes and norms copied to `device`, unpacked and scaled there (the
  /// host decode's values bit for bit); natural_dithering decodes on the host.
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// qsgd's encode() with tensor operations wherever grad lives, drawing the next dither key
  /// as encode() does: the same draws, levels and signs as the host. Each bucket's L2 norm
  /// comes from a double sum in LibTorch's order (the host adds float lanes), so it can
  /// differ from the host's in its last bits, and an element whose rounding lies that close
  /// to a level boundary can land one level apart; an infinite element's NaN norm keeps
  /// its NaN but not necessarily the host's NaN bits.
  Bytes encode_with_tensor_ops(const at::Tensor& grad);
  /// Encode: a norm pass per bucket (4n bytes; L2: 2 operations per element, L_inf: 1), a
  /// quantising pass (4n bytes; a random number and 4 operations per element), the payload
  /// written. Decode: the payload read, 4n bytes written, 2 operations per element.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  /// State: the position of the dither stream (so `gradwire codec --state` keeps drawing
  /// fresh roundings across calls).
  Bytes save_state() const override { return dither_.save(name()); }
  void load_state(ByteSpan state) override { dither_.load(state, name(), initial_dither_); }

  /// Exact payload size for n elements.
  std::size_t payload_size(std::uint64_t n) const;
  std::uint32_t levels() const { return levels_; }

 private:
  /// A checked payload: everything but the level bound, which decoding checks as it unpacks.
  struct Parsed {
    std::uint64_t n = 0, nb = 0;
    std::uint32_t s = 0, b = 0;
    unsigned level_bits = 0;
    const std::uint8_t* norms = nullptr;
    const std::uint8_t* codes = nullptr;
  };
  Parsed parse(ByteSpan payload) const;
  [[noreturn]] void reject_level(std::uint32_t worst, std::uint32_t s) const;
  CodecId id() const { return scheme_ == Levels::kUniform ? CodecId::kQsgd : CodecId::kNaturalDithering; }

  Levels scheme_;
  std::uint32_t levels_;
  std::uint32_t bucket_;
  Norm norm_;
  quant::Dither dither_;
  std::uint64_t initial_dither_ = 0;
};

}  // namespace gradwire
