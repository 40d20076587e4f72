#include "codecs/sparsify/RandomKCodec.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <torch/types.h>

#include "codecs/CodecState.h"
#include "codecs/GradientChecks.h"
#include "codecs/RatioCounts.h"
#include "codecs/sparsify/SparseRandom.h"
#include "codecs/wire/SparseWire.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

namespace {
constexpr const char* kWhat = "randomk payload";
constexpr std::uint64_t kMaxAddressable = std::uint64_t{1} << 32;
constexpr std::size_t kBodyFixed = 12;  // u64 seed + u32 k

CodecTraits randomk_traits() {
  CodecTraits t;
  t.name = "randomk";
  t.aggregation = Aggregation::kSummable;
  t.encodes_on_device = true;
  // Indices come from the seed, so a lost value is a zero at a known index.
  t.loss_tolerance = {kPayloadHeaderSize + kBodyFixed, 4};
  return t;
}
}  // namespace

RandomKCodec::RandomKCodec(double ratio, bool scale, const CodecContext& ctx)
    : Codec(randomk_traits()),
      ratio_(ratio),
      scale_(scale),
      seed_(ctx.seed),
      max_elements_(ctx.numel > 0 ? static_cast<std::uint64_t>(ctx.numel) : kMaxAddressable) {
  if (!(ratio > 0.0 && ratio <= 1.0)) throw std::invalid_argument("randomk: ratio must be in (0, 1]");
}

std::int64_t RandomKCodec::k_for(std::int64_t n) const {
  if (n <= 0) return 0;
  const std::int64_t k = count_from_ratio(ratio_, n, CountRounding::kNearest);
  return std::clamp<std::int64_t>(k, 1, n);
}

std::uint64_t RandomKCodec::index_seed(std::uint64_t seed, std::uint64_t step,
                                       std::uint64_t offset, std::uint64_t length) {
  return mix_seed(seed ^ 0x72616e646f6d6bULL, step, offset, length);
}

std::vector<std::uint32_t> RandomKCodec::positions(std::uint64_t index_seed, std::uint64_t n,
                                                   std::uint64_t k) {
  std::vector<std::uint32_t> out;
  if (k == 0 || n == 0) return out;
  out.reserve(static_cast<std::size_t>(k));
  if (k >= n) {
    for (std::uint64_t i = 0; i < n; ++i) out.push_back(static_cast<std::uint32_t>(i));
    return out;
  }
  // Floyd: for j = n-k .. n-1 draw t in [0, j]; take t unless taken, else take j.
  std::vector<std::uint64_t> bitmap(static_cast<std::size_t>((n + 63) / 64), 0);
  SplitMix64 rng(index_seed);
  for (std::uint64_t j = n - k; j < n; ++j) {
    std::uint64_t t = rng.below(j + 1);
    if ((bitmap[t >> 6] >> (t & 63)) & 1u) t = j;
    bitmap[t >> 6] |= std::uint64_t{1} << (t & 63);
  }
  for (std::size_t w = 0; w < bitmap.size(); ++w) {
    std::uint64_t word = bitmap[w];
    while (word != 0) {
      const int bit = __builtin_ctzll(word);
      out.push_back(static_cast<std::uint32_t>(64 * w + static_cast<std::size_t>(bit)));
      word &= word - 1;
    }
  }
  return out;
}

Bytes RandomKCodec::encode_slice(const torch::Tensor& slice, std::uint64_t step,
                                 std::uint64_t offset) {
  const auto n = static_cast<std::uint64_t>(slice.numel());
  if (n > kMaxAddressable) throw std::invalid_argument("randomk encode: more than 2^32 elements");
  const auto k = static_cast<std::uint64_t>(k_for(static_cast<std::int64_t>(n)));
  const std::uint64_t s = index_seed(seed_, step, offset, n);
  const std::vector<std::uint32_t> pos = positions(s, n, k);
  const float* x = slice.device().is_cpu() ? slice.data_ptr<float>() : nullptr;
  const float factor = scale_ && k > 0 ? static_cast<float>(static_cast<double>(n) / static_cast<double>(k)) : 1.0f;
  ByteWriter w(kPayloadHeaderSize + kBodyFixed + 4 * k);
  write_header(w, CodecId::kRandomK, kFormatVersion, n);
  w.u64(s);
  w.u32(static_cast<std::uint32_t>(k));
  std::uint8_t* dst = w.extend(4 * static_cast<std::size_t>(k));
  if (!slice.device().is_cpu()) {
    // Positions come from the shared seed on the host; the k values are gathered (and scaled,
    // one float multiply as below) where the gradient lives, and only they cross.
    const torch::Tensor values = gather_scaled(slice, pos, factor);
    const float* v = values.data_ptr<float>();
    for (std::size_t j = 0; j < pos.size(); ++j) store_f32_le(dst + 4 * j, v[j]);
    return w.take();
  }
  for (std::size_t j = 0; j < pos.size(); ++j) store_f32_le(dst + 4 * j, factor * x[pos[j]]);
  return w.take();
}

torch::Tensor RandomKCodec::gather_scaled(const torch::Tensor& slice,
                                          const std::vector<std::uint32_t>& pos, float factor) {
  torch::Tensor index = torch::empty({static_cast<std::int64_t>(pos.size())}, torch::kLong);
  auto* idx = index.data_ptr<std::int64_t>();
  for (std::size_t j = 0; j < pos.size(); ++j) idx[j] = pos[j];
  torch::Tensor values = slice.index_select(0, index.to(slice.device()));
  if (factor != 1.0f) values = values.mul(factor);
  return values.to(torch::kCPU).contiguous();
}

Bytes RandomKCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "randomk encode", /*on_device=*/true);
  const std::uint64_t step = step_++;
  const std::int64_t n = grad.numel();
  set_last_density(n > 0 ? static_cast<double>(k_for(n)) / static_cast<double>(n) : 1.0);
  return encode_slice(grad, step, 0);
}

std::vector<Bytes> RandomKCodec::encode_chunks(const torch::Tensor& grad,
                                               const std::vector<std::int64_t>& bounds) {
  check_gradient(grad, "randomk encode_chunks", /*on_device=*/true);
  check_chunk_bounds(grad.numel(), bounds);
  const std::uint64_t step = step_++;
  std::vector<Bytes> out;
  std::int64_t sent = 0;
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i) {
    const std::int64_t len = bounds[i + 1] - bounds[i];
    out.push_back(encode_slice(grad.narrow(0, bounds[i], len), step,
                               static_cast<std::uint64_t>(bounds[i])));
    sent += k_for(len);
  }
  const std::int64_t n = grad.numel();
  set_last_density(n > 0 ? static_cast<double>(sent) / static_cast<double>(n) : 1.0);
  return out;
}

namespace {
struct Parsed {
  std::uint64_t n;
  std::uint64_t seed;
  std::uint64_t k;
  std::size_t values_offset;
};

Parsed parse(ByteSpan payload, std::uint64_t max_elements, const RandomKCodec& codec) {
  ByteReader r(payload, kWhat);
  const PayloadHeader h = read_header(r, CodecId::kRandomK, "randomk", RandomKCodec::kFormatVersion);
  const std::uint64_t limit = std::min(max_elements, kMaxAddressable);
  if (h.numel > limit) {
    r.fail("element count " + std::to_string(h.numel) + " exceeds this decoder's limit of " +
           std::to_string(limit));
  }
  const std::uint64_t seed = r.u64("index seed");
  const std::uint64_t k = r.u32("k");
  if (k > h.numel) r.fail("k = " + std::to_string(k) + " exceeds the element count " + std::to_string(h.numel));
  if (k != static_cast<std::uint64_t>(codec.k_for(static_cast<std::int64_t>(h.numel)))) {
    r.fail("k = " + std::to_string(k) + " does not match this codec's ratio for " +
           std::to_string(h.numel) + " elements");
  }
  if (r.remaining() != 4 * k) {
    r.fail("size mismatch: k = " + std::to_string(k) + " needs " + std::to_string(4 * k) +
           " bytes after offset " + std::to_string(r.offset()) + ", have " + std::to_string(r.remaining()));
  }
  return Parsed{h.numel, seed, k, r.offset()};
}
}  // namespace

torch::Tensor RandomKCodec::decode(ByteSpan payload) const {
  const Parsed p = parse(payload, max_elements_, *this);
  const std::vector<std::uint32_t> pos = positions(p.seed, p.n, p.k);
  torch::Tensor out = torch::zeros({static_cast<std::int64_t>(p.n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  const std::uint8_t* v = payload.data + p.values_offset;
  for (std::size_t j = 0; j < pos.size(); ++j) dst[pos[j]] = load_f32_le(v + 4 * j);
  return out;
}

torch::Tensor RandomKCodec::decode_to(ByteSpan payload, const c10::Device& device) const {
  const Parsed p = parse(payload, max_elements_, *this);
  const std::vector<std::uint32_t> pos = positions(p.seed, p.n, p.k);
  std::vector<float> values(pos.size());
  const std::uint8_t* v = payload.data + p.values_offset;
  for (std::size_t j = 0; j < pos.size(); ++j) values[j] = load_f32_le(v + 4 * j);
  return scatter_to(p.n, std::vector<std::int64_t>(pos.begin(), pos.end()), values, device);
}

void RandomKCodec::accumulate(Bytes& acc, ByteSpan other) const {
  const Parsed a = parse(ByteSpan(acc), max_elements_, *this);
  const Parsed b = parse(other, max_elements_, *this);
  if (a.n != b.n || a.seed != b.seed || a.k != b.k) {
    throw DecodeError("randomk accumulate: payloads describe different positions (n " +
                      std::to_string(a.n) + " vs " + std::to_string(b.n) + ", seeds " +
                      std::to_string(a.seed) + " vs " + std::to_string(b.seed) +
                      "): workers are out of step");
  }
  std::uint8_t* dst = acc.data() + a.values_offset;
  const std::uint8_t* src = other.data + b.values_offset;
  add_f32_array_le(dst, src, a.k);
}

Bytes RandomKCodec::save_state() const {
  CodecState st(name());
  st.put_u64("step", step_);
  return st.serialize();
}

void RandomKCodec::load_state(ByteSpan state) {
  if (state.size == 0) return;
  step_ = CodecState::parse(state, name()).u64("step");
}

CodecWork RandomKCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double k = static_cast<double>(k_for(numel));
  const double bytes = static_cast<double>(payload_bytes);
  const CodecWork positions = CodecWork::compute(k * kFlopsPerRandomNumber) + CodecWork::memory(n / 4);
  switch (op) {
    case CodecOp::kEncode: return positions + CodecWork::gather(n, k) + CodecWork::memory(bytes);
    case CodecOp::kDecode:
      return positions + CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, k);
    case CodecOp::kAccumulate: return CodecWork::memory(3 * bytes) + CodecWork::compute(k);
    default: return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
