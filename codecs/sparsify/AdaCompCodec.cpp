#include "codecs/sparsify/AdaCompCodec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/kernels/SparseKernels.h"
#include "codecs/sparsify/LayerPlan.h"
#include "codecs/sparsify/ThresholdSampling.h"
#include "codecs/wire/SparseWire.h"

namespace gradwire {

namespace {
constexpr const char* kWhat = "adacomp payload";
constexpr std::uint64_t kMaxAddressable = std::uint64_t{1} << 32;
}  // namespace

AdaCompCodec::AdaCompCodec(AdaCompOptions options, const CodecContext& ctx)
    : Codec(CodecTraits{"adacomp"}),
      options_(options),
      layers_(ctx.layers),
      max_elements_(ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel) : kMaxAddressable),
      residual_(std::make_unique<torch::Tensor>()) {
  if (options_.bin_conv < 1 || options_.bin_fc < 1) {
    throw std::invalid_argument("adacomp: bin lengths must be >= 1");
  }
}

AdaCompCodec::~AdaCompCodec() = default;

const torch::Tensor& AdaCompCodec::residual() const {
  settle_pending();
  return *residual_;
}

Bytes AdaCompCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "adacomp encode");
  const std::int64_t n = grad.numel();
  if (static_cast<std::uint64_t>(n) > kMaxAddressable) {
    throw std::invalid_argument("adacomp encode: more than 2^32 elements");
  }
  ensure_state(*residual_, n, "adacomp");
  float* r = residual_->data_ptr<float>();  // becomes G, then G - sent
  const float* g = grad.data_ptr<float>();

  // One pass over the tensor, bin by bin (50 or 500 floats: in L1 for the second look): the
  // previous encode's sends in the bin get their scale taken off (see pending_), G = r + g
  // and the bin's largest |G|, then the test |G + g| >= gmax appends the position and G.
  // The scale of this encode's sends is known only once their segment is done, so their
  // residue keeps G until the next encode (or residual() / save_state()) passes by.
  const std::vector<Segment> plan = plan_segments(layers_, n, false);
  const bool have_pending = pending_bounds_.size() == plan.size() + 1;
  const bool have_masks = have_pending && pending_masks_valid_;
  std::size_t total_masks = 0;
  for (const Segment& s : plan) total_masks += bin_scan_masks(s.length, s.dims == 4 ? options_.bin_conv : options_.bin_fc);
  if (masks_.size() < total_masks) masks_.resize(total_masks);
  std::size_t mask_at = 0;
  bool masks_written = true;
  std::vector<std::uint32_t>& indices = indices_;
  std::size_t k = 0;
  std::vector<std::pair<std::uint32_t, float>> segments;  // (count, scale)
  std::vector<std::size_t> bounds{0};
  std::vector<float> scales;
  const std::int64_t longest_bin = std::min<std::int64_t>(std::max(options_.bin_conv, options_.bin_fc), n);
  selected_.assign(static_cast<std::size_t>((longest_bin + 63) / 64 * 64 + 64), 0);
  for (std::size_t si = 0; si < plan.size(); ++si) {
    const Segment& s = plan[si];
    const std::int64_t bin = s.dims == 4 ? options_.bin_conv : options_.bin_fc;
    PendingSends pending;
    if (have_pending) {
      pending.indices = pending_indices_.data() + pending_bounds_[si];
      pending.count = pending_bounds_[si + 1] - pending_bounds_[si];
      pending.scale = pending_scales_[si];
      if (have_masks) pending.masks = pending_masks_.data() + mask_at;
    }
    const std::size_t first = k;
    // Room for the whole segment plus one vector of slack (the kernels store whole vectors).
    room_for(indices, k, s.length + 16);
    if (kept_.size() < indices.size()) kept_.resize(indices.size());
    BinScan scan;
    if (adacomp_scan_avx512(r, g, s.offset, s.offset + s.length, bin, pending, indices.data() + k,
                            kept_.data() + k, masks_.data() + mask_at, scan)) {
      k += scan.count;
    } else {
      scan_portable(r, g, s.offset, s.offset + s.length, bin, pending, k, scan);
      masks_written = false;
    }
    mask_at += bin_scan_masks(s.length, bin);
    const std::size_t count = k - first;
    const auto scale = count == 0 ? 0.0f : static_cast<float>(scan.gmax_sum / static_cast<double>(scan.bins));
    bounds.push_back(k);
    scales.push_back(scale);
    if (count != 0) segments.emplace_back(static_cast<std::uint32_t>(count), scale);
  }
  set_last_density(n > 0 ? static_cast<double>(k) / static_cast<double>(n) : 1.0);

  std::size_t section = 0;
  const IndexCoding coding = choose_index_coding(indices.data(), k, &section);
  // Per tensor: its count and scale, and its share of the index and sign sections (coded
  // over all k positions together, so shared in proportion to what each tensor sent).
  std::vector<TensorSend> sends;
  if (segments_are_layers(plan, layers_)) {
    sends.resize(plan.size());
    const double per_sent = k == 0 ? 0.0 : static_cast<double>(section + (k + 7) / 8) / static_cast<double>(k);
    for (std::size_t si = 0; si < plan.size(); ++si) {
      const std::size_t count = bounds[si + 1] - bounds[si];
      sends[si].sent = static_cast<std::int64_t>(count);
      sends[si].bytes = count == 0 ? 0.0 : 8.0 + per_sent * static_cast<double>(count);
    }
  }
  set_last_tensor_sends(std::move(sends));
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
  // Signs: a sent G is neither zero nor NaN, so its sign bit is G < 0.
  std::uint8_t* bits = w.extend((k + 7) / 8);
  const float* kept = kept_.data();
  std::size_t j = 0;
  for (; j + 8 <= k; j += 8) {
    std::uint32_t byte = 0;
    for (int q = 0; q < 8; ++q) byte |= static_cast<std::uint32_t>(kept[j + q] < 0.0f) << q;
    bits[j / 8] = static_cast<std::uint8_t>(byte);
  }
  if (j < k) {
    std::uint32_t byte = 0;
    for (std::size_t q = 0; j + q < k; ++q) byte |= static_cast<std::uint32_t>(kept[j + q] < 0.0f) << q;
    bits[j / 8] = static_cast<std::uint8_t>(byte);
  }
  // This encode's sends become the pending ones.
  std::swap(indices_, pending_indices_);
  std::swap(masks_, pending_masks_);
  pending_masks_valid_ = masks_written;
  pending_bounds_ = std::move(bounds);
  pending_scales_ = std::move(scales);
  return w.take();
}

void AdaCompCodec::scan_portable(float* r, const float* g, std::int64_t begin, std::int64_t end, std::int64_t bin,
                                 const PendingSends& pending, std::size_t& k, BinScan& scan) {
  // Per bin: G = r + g and the bin's largest |G| in one vectorisable loop (as magnitude keys,
  // NaN counted as 0 as std::max skips it), then the test as 0/1 bytes (vectorised), then the
  // positions of the ones, 64 at a time from a bit mask: a tenth or so of a bin is sent, so
  // walking its set bits is short.
  std::uint32_t* dst = indices_.data();
  float* kept = kept_.data();
  std::size_t p = 0;
  for (std::int64_t b = begin; b < end; b += bin) {
    const std::int64_t e = std::min(b + bin, end);
    // The previous encode's sends in this bin: their lines are about to be read anyway.
    std::size_t q = p;
    while (q < pending.count && pending.indices[q] < static_cast<std::uint64_t>(e)) ++q;
    apply_pending_sends(r, pending.indices + p, q - p, pending.scale);
    p = q;
    std::int32_t top = 0;
    for (std::int64_t i = b; i < e; ++i) {
      r[i] += g[i];
      const auto key = static_cast<std::int32_t>(magnitude_key(r[i]));
      top = std::max(top, key > 0x7f800000 ? 0 : key);
    }
    const float gmax = key_to_magnitude(static_cast<std::uint32_t>(top));
    scan.gmax_sum += gmax;
    ++scan.bins;
    if (!(gmax > 0.0f)) continue;  // nothing accumulated in this bin
    const std::int64_t len = e - b;
    std::uint8_t* sel = selected_.data();
    for (std::int64_t j = 0; j < len; ++j) {
      sel[j] = static_cast<std::uint8_t>((r[b + j] != 0.0f) & (std::fabs(r[b + j] + g[b + j]) >= gmax));
    }
    for (std::int64_t j = 0; j < len; j += 64) {
      std::uint64_t mask = 0;
      for (int q8 = 0; q8 < 8; ++q8) {
        std::uint64_t word;
        std::memcpy(&word, sel + j + 8 * q8, sizeof word);  // selected_ has 64 bytes of slack
        mask |= ((word * 0x0102040810204080ULL) >> 56) << (8 * q8);
      }
      if (len - j < 64) mask &= (std::uint64_t{1} << (len - j)) - 1;
      while (mask != 0) {
        const std::int64_t i = b + j + __builtin_ctzll(mask);
        dst[k] = static_cast<std::uint32_t>(i);
        kept[k++] = r[i];
        mask &= mask - 1;
      }
    }
  }
  apply_pending_sends(r, pending.indices + p, pending.count - p, pending.scale);
}

void AdaCompCodec::settle_pending() const {
  if (pending_bounds_.size() < 2 || !residual_->defined()) {
    pending_bounds_.clear();
    return;
  }
  float* r = residual_->data_ptr<float>();
  for (std::size_t si = 0; si + 1 < pending_bounds_.size(); ++si) {
    apply_pending_sends(r, pending_indices_.data() + pending_bounds_[si], pending_bounds_[si + 1] - pending_bounds_[si],
                        pending_scales_[si]);
  }
  pending_bounds_.clear();
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
  settle_pending();
  CodecState st(name());
  st.put_tensor("residual", *residual_);
  return st.serialize();
}

void AdaCompCodec::load_state(ByteSpan state) {
  if (state.size == 0) return;
  *residual_ = CodecState::parse(state, name()).tensor("residual");
  pending_bounds_.clear();
}

CodecWork AdaCompCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double bytes = static_cast<double>(payload_bytes);
  const double k = last_density() * n;
  if (op == CodecOp::kDecode) return CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, k);
  if (op != CodecOp::kEncode) return Codec::work(op, numel, payload_bytes);
  return CodecWork::memory(12 * n + 8 * k + bytes) + CodecWork::compute(6 * n);
}

}  // namespace gradwire
