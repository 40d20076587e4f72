#include "codecs/sparsify/AdaCompCodec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/sparsify/LayerPlan.h"
#include "codecs/sparsify/ThresholdSampling.h"
#include "codecs/wire/SparseWire.h"

namespace gradwire {

namespace {
constexpr const char* kWhat = "adacomp payload";
constexpr std::uint64_t kMaxAddressable = std::uint64_t{1} << 32;
}  // namespace

AdaCompCodec::AdaCompCodec(AdaCompOptions options, const CodecContext& ctx)
    : options_(options),
      layers_(ctx.layers),
      max_elements_(ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel) : kMaxAddressable),
      residual_(std::make_unique<torch::Tensor>()) {
  if (options_.bin_conv < 1 || options_.bin_fc < 1) {
    throw std::invalid_argument("adacomp: bin lengths must be >= 1");
  }
}

AdaCompCodec::~AdaCompCodec() = default;

const torch::Tensor& AdaCompCodec::residual() const { return *residual_; }

Bytes AdaCompCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "adacomp encode");
  const std::int64_t n = grad.numel();
  if (static_cast<std::uint64_t>(n) > kMaxAddressable) {
    throw std::invalid_argument("adacomp encode: more than 2^32 elements");
  }
  ensure_state(*residual_, n, "adacomp");
  float* r = residual_->data_ptr<float>();  // becomes G, then G - sent
  const float* g = grad.data_ptr<float>();

  // Per bin (50 or 500 floats: in L1 for the second look): G = r + g and the bin's largest
  // |G| in one vectorisable loop (as magnitude keys, NaN counted as 0 as std::max skips it),
  // then the test |G + g| >= gmax with a branch-free append. Once the tensor's scale is known,
  // the sent entries' signs are noted and the scale taken off their residual.
  std::vector<std::uint32_t>& indices = indices_;
  std::vector<std::uint8_t>& negative = negative_;
  std::size_t k = 0;
  std::vector<std::pair<std::uint32_t, float>> segments;  // (count, scale)
  const std::int64_t longest_bin = std::min<std::int64_t>(std::max(options_.bin_conv, options_.bin_fc), n);
  selected_.assign(static_cast<std::size_t>((longest_bin + 63) / 64 * 64 + 64), 0);
  for (const Segment& s : plan_segments(layers_, n, false)) {
    const std::int64_t bin = s.dims == 4 ? options_.bin_conv : options_.bin_fc;
    const std::size_t first = k;
    double gmax_sum = 0.0;
    std::int64_t bins = 0;
    for (std::int64_t b = s.offset; b < s.offset + s.length; b += bin) {
      const std::int64_t e = std::min(b + bin, s.offset + s.length);
      std::int32_t top = 0;
      for (std::int64_t i = b; i < e; ++i) {
        r[i] += g[i];
        const auto key = static_cast<std::int32_t>(magnitude_key(r[i]));
        top = std::max(top, key > 0x7f800000 ? 0 : key);
      }
      const float gmax = key_to_magnitude(static_cast<std::uint32_t>(top));
      gmax_sum += gmax;
      ++bins;
      if (!(gmax > 0.0f)) continue;  // nothing accumulated in this bin
      // The test as 0/1 bytes (vectorised), then the positions of the ones, 64 at a time
      // from a bit mask: a tenth or so of a bin is sent, so walking its set bits is short.
      const std::int64_t len = e - b;
      std::uint8_t* sel = selected_.data();
      for (std::int64_t j = 0; j < len; ++j) {
        sel[j] = static_cast<std::uint8_t>((r[b + j] != 0.0f) & (std::fabs(r[b + j] + g[b + j]) >= gmax));
      }
      std::uint32_t* dst = room_for(indices, k, len);
      if (kept_.size() < indices.size()) kept_.resize(indices.size());
      float* kept = kept_.data();
      std::size_t m = 0;
      for (std::int64_t j = 0; j < len; j += 64) {
        std::uint64_t mask = 0;
        for (int q = 0; q < 8; ++q) {
          std::uint64_t word;
          std::memcpy(&word, sel + j + 8 * q, sizeof word);  // selected_ has 64 bytes of slack
          mask |= ((word * 0x0102040810204080ULL) >> 56) << (8 * q);
        }
        if (len - j < 64) mask &= (std::uint64_t{1} << (len - j)) - 1;
        while (mask != 0) {
          const std::int64_t i = b + j + __builtin_ctzll(mask);
          dst[m] = static_cast<std::uint32_t>(i);
          kept[k + m++] = r[i];
          mask &= mask - 1;
        }
      }
      k += m;
    }
    const std::size_t count = k - first;
    if (count == 0) continue;
    const auto scale = static_cast<float>(gmax_sum / static_cast<double>(bins));
    if (negative.size() < k) negative.resize(std::max(k, 2 * negative.size()));
    // G of the sent entries was kept while their bin was in L1: no dependent loads here.
    for (std::size_t j = first; j < k; ++j) {
      const float x = kept_[j];
      const bool neg = x < 0.0f;
      negative[j] = neg ? 1 : 0;
      r[indices[j]] = x - (neg ? -scale : scale);
    }
    segments.emplace_back(static_cast<std::uint32_t>(count), scale);
  }
  last_density_ = n > 0 ? static_cast<double>(k) / static_cast<double>(n) : 1.0;

  std::size_t section = 0;
  const IndexCoding coding = choose_index_coding(indices.data(), k, &section);
  ByteWriter w(kPayloadHeaderSize + 13 + 8 * segments.size() + section + (k + 7) / 8);
  write_header(w, CodecId::kAdaComp, kFormatVersion, static_cast<std::uint64_t>(n));
  w.u8(static_cast<std::uint8_t>(coding));
  w.u32(static_cast<std::uint32_t>(k));
  w.u32(static_cast<std::uint32_t>(section));
  w.u32(static_cast<std::uint32_t>(segments.size()));
  for (const auto& [count, scale] : segments) {
    w.u32(count);
    w.f32(scale);
  }
  write_index_section(w, coding, indices.data(), k, section);
  std::uint8_t* bits = w.extend((k + 7) / 8);
  std::fill(bits, bits + (k + 7) / 8, std::uint8_t{0});
  std::size_t j = 0;
  for (; j + 8 <= k; j += 8) {
    // Eight 0/1 bytes (little-endian) to eight bits: the multiply moves byte b's bit to bit
    // 56 + b, and no two partial products overlap below bit 64.
    std::uint64_t word;
    std::memcpy(&word, negative.data() + j, sizeof word);
    bits[j / 8] = static_cast<std::uint8_t>((word * 0x0102040810204080ULL) >> 56);
  }
  for (; j < k; ++j) bits[j / 8] |= static_cast<std::uint8_t>(negative[j] << (j % 8));
  return w.take();
}

torch::Tensor AdaCompCodec::decode_payload(ByteSpan payload, std::uint64_t max_elements) {
  ByteReader r(payload, kWhat);
  const PayloadHeader h = read_header(r, CodecId::kAdaComp, "adacomp", kFormatVersion);
  const std::uint64_t limit = std::min(max_elements, kMaxAddressable);
  if (h.numel > limit) {
    r.fail("element count " + std::to_string(h.numel) + " exceeds this decoder's limit of " +
           std::to_string(limit));
  }
  const std::uint8_t coding = r.u8("index coding");
  if (coding > 3) r.fail("unknown index coding " + std::to_string(coding));
  const std::uint64_t k = r.u32("k");
  if (k > h.numel) r.fail("k = " + std::to_string(k) + " exceeds the element count " + std::to_string(h.numel));
  const std::uint64_t section = r.u32("index bytes");
  const std::uint64_t segs = r.u32("segment count");
  if (segs > r.remaining() / 8) {
    r.fail("segment count " + std::to_string(segs) + " needs " + std::to_string(8 * segs) +
           " bytes, " + std::to_string(r.remaining()) + " left");
  }
  std::vector<std::pair<std::uint64_t, float>> segments(static_cast<std::size_t>(segs));
  std::uint64_t total = 0;
  for (auto& [count, scale] : segments) {
    count = r.u32("segment count field");
    scale = r.f32("segment scale");
    total += count;
  }
  if (total != k) {
    r.fail("segment counts add up to " + std::to_string(total) + ", not k = " + std::to_string(k));
  }
  const std::uint64_t sign_bytes = (k + 7) / 8;
  if (r.remaining() != section + sign_bytes) {
    r.fail("size mismatch: " + std::to_string(section) + " index bytes + " +
           std::to_string(sign_bytes) + " sign bytes after offset " + std::to_string(r.offset()) +
           ", have " + std::to_string(r.remaining()));
  }
  const std::vector<std::uint32_t> idx =
      read_index_section(r, static_cast<IndexCoding>(coding), static_cast<std::size_t>(k),
                         static_cast<std::size_t>(section), h.numel);
  const std::uint8_t* bits = r.take(static_cast<std::size_t>(sign_bytes), 1, "sign bits");
  r.expect_end();
  if (k % 8 != 0 && (bits[sign_bytes - 1] >> (k % 8)) != 0) {
    r.fail("padding bits after the last sign are not zero");
  }
  torch::Tensor out = torch::zeros({static_cast<std::int64_t>(h.numel)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  std::size_t j = 0;
  for (const auto& [count, scale] : segments) {
    for (std::uint64_t c = 0; c < count; ++c, ++j) {
      const bool neg = (bits[j / 8] >> (j % 8)) & 1u;
      dst[idx[j]] = neg ? -scale : scale;
    }
  }
  return out;
}

torch::Tensor AdaCompCodec::decode(ByteSpan payload) const {
  return decode_payload(payload, max_elements_);
}

Bytes AdaCompCodec::save_state() const {
  CodecState st(name());
  st.put_tensor("residual", *residual_);
  return st.serialize();
}

void AdaCompCodec::load_state(ByteSpan state) {
  if (state.size == 0) return;
  *residual_ = CodecState::parse(state, name()).tensor("residual");
}

CodecWork AdaCompCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  const double k = last_density_ * n;
  if (op == CodecOp::kDecode) return CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, k);
  if (op != CodecOp::kEncode) return Codec::work(op, numel, payload_bytes);
  return CodecWork::memory(24 * n + bytes) + CodecWork::compute(5 * n) + CodecWork::gather(n, k);
}

}  // namespace gradwire
