#include "codecs/sparsify/TopKCodec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <torch/types.h>

#include "codecs/GradientChecks.h"
#include "codecs/RatioCounts.h"
#include "codecs/sparsify/ThresholdSampling.h"
#include "codecs/wire/SparseWire.h"

namespace gradwire {

namespace {
constexpr const char* kWhat = "topk payload";
// Indices travel as u32, so a topk payload addresses at most 2^32 elements.
constexpr std::uint64_t kMaxAddressable = std::uint64_t{1} << 32;}  // namespace

TopKCodec::TopKCodec(double ratio, std::uint64_t max_elements)
    : Codec(CodecTraits{"topk", Aggregation::kDecodeThenSum, /*encodes_on_device=*/true}),
      ratio_(ratio), max_elements_(std::min(max_elements, kMaxAddressable)) {
  if (!(ratio > 0.0 && ratio <= 1.0)) {  // also rejects NaN
    throw std::invalid_argument("topk: ratio must be in (0, 1], got " + std::to_string(ratio));
  }
}

std::int64_t TopKCodec::k_for(std::int64_t n) const {
  if (n <= 0) return 0;
  const std::int64_t k = count_from_ratio(ratio_, n, CountRounding::kNearest);
  return std::clamp<std::int64_t>(k, 1, n);
}

Bytes TopKCodec::encode_selected(const torch::Tensor& grad, const torch::Tensor& indices) {
  const auto n = static_cast<std::uint64_t>(grad.numel());
  if (n > kMaxAddressable) {
    throw std::invalid_argument("topk encode: " + std::to_string(n) +
                                " elements do not fit u32 indices (at most 2^32)");
  }
  const torch::Tensor idx = indices.to(torch::kLong).contiguous();
  const auto k = static_cast<std::uint64_t>(idx.numel());
  const torch::Tensor values = grad.index_select(0, idx);  // contiguous, float32

  ByteWriter writer(payload_size(k));
  write_header(writer, CodecId::kTopK, kFormatVersion, n);
  writer.u32(static_cast<std::uint32_t>(k));
  // int64 -> u32 straight into the payload, no temporary tensor.
  std::uint8_t* dst = writer.extend(4 * k);
  const std::int64_t* src = idx.data_ptr<std::int64_t>();
  for (std::uint64_t i = 0; i < k; ++i) store_u32_le(dst + 4 * i, static_cast<std::uint32_t>(src[i]));
  writer.f32_array(values.data_ptr<float>(), k);
  return writer.take();
}

namespace {

/// Order key of |x|: the float's bits with the sign cleared. For non-negative IEEE floats the
/// bit pattern orders like the value, and NaN (above +inf) ranks largest, as in torch.topk.
inline std::uint32_t magnitude_key(const float* values, std::int64_t i) {
  std::uint32_t bits;
  std::memcpy(&bits, values + i, sizeof bits);
  return bits & 0x7fffffffu;
}

/// Walks a digit histogram from the largest digit down and returns the bucket that holds the
/// `remaining`-th largest key; `remaining` becomes that key's rank inside the bucket.
template <typename Count>
std::uint32_t find_bucket(const std::vector<Count>& histogram, std::int64_t& remaining) {
  auto bucket = static_cast<std::uint32_t>(histogram.size() - 1);
  while (static_cast<std::int64_t>(histogram[bucket]) < remaining) {
    remaining -= static_cast<std::int64_t>(histogram[bucket--]);
  }
  return bucket;
}

/// The positions of the k largest |values| (0 < k < n), ascending, ties broken towards lower
/// positions.
///
/// Why not torch::topk: on one long row it runs a selection over (value, index) pairs, and
/// the k indices would still need sorting; that measured 12.6 ms for 1M elements at k = 1%
/// and 242 ms at 10M on the development machine (this: 1.9 ms and 29 ms). This is an exact radix select on the
/// magnitude keys: an 11-bit digit histogram over all elements picks the bucket holding the
/// k-th largest key, the few keys of that bucket are gathered, and two more digit passes
/// (11 and 9 bits) over them pin the key down. One last ascending scan emits the selection
/// already sorted. The full scans are branch-free (a data-dependent branch per element
/// mispredicts on gradient data). It is deterministic under ties, which keeps fixed-compute
/// runs bit-for-bit repeatable.
std::vector<std::uint32_t> radix_select_top_magnitudes(const float* values, std::int64_t n,
                                                       std::int64_t k) {
  // Digit 1: bits 30..20 (the exponent and 3 mantissa bits), over all elements. Four
  // interleaved sub-histograms: magnitudes crowd into a few exponent buckets, and
  // back-to-back increments of one counter would serialise on memory.
  constexpr int kShift1 = 20;
  constexpr std::size_t kBuckets1 = std::size_t{1} << 11;
  std::vector<std::uint32_t> lanes(4 * kBuckets1, 0);
  std::int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++lanes[4 * (magnitude_key(values, i) >> kShift1)];
    ++lanes[4 * (magnitude_key(values, i + 1) >> kShift1) + 1];
    ++lanes[4 * (magnitude_key(values, i + 2) >> kShift1) + 2];
    ++lanes[4 * (magnitude_key(values, i + 3) >> kShift1) + 3];
  }
  for (; i < n; ++i) ++lanes[4 * (magnitude_key(values, i) >> kShift1)];
  std::vector<std::int64_t> histogram(kBuckets1);
  for (std::size_t b = 0; b < kBuckets1; ++b) {
    histogram[b] = std::int64_t{lanes[4 * b]} + lanes[4 * b + 1] + lanes[4 * b + 2] + lanes[4 * b + 3];
  }
  std::int64_t remaining = k;
  const std::uint32_t top = find_bucket(histogram, remaining);

  // Gather that bucket's keys (branch-free: always store, advance only on a match; one spare
  // slot absorbs the last unconditional store).
  std::vector<std::uint32_t> candidates(static_cast<std::size_t>(histogram[top]) + 1);
  std::size_t m = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    const std::uint32_t key = magnitude_key(values, j);
    candidates[m] = key;
    m += (key >> kShift1) == top;
  }
  candidates.resize(m);

  // Digits 2 (bits 19..9) and 3 (bits 8..0) over the candidates only.
  std::uint32_t prefix = top << kShift1;
  std::int64_t equal = 0;  // how many keys equal the final threshold
  for (const auto& [shift, bits] : {std::pair<int, int>{9, 11}, std::pair<int, int>{0, 9}}) {
    const std::uint32_t mask = (1u << bits) - 1;
    std::vector<std::int64_t> h(std::size_t{1} << bits, 0);
    for (const std::uint32_t key : candidates) {
      if ((key >> (shift + bits)) == (prefix >> (shift + bits))) ++h[(key >> shift) & mask];
    }
    const std::uint32_t digit = find_bucket(h, remaining);
    prefix |= digit << shift;
    equal = h[digit];
  }
  const std::uint32_t threshold = prefix;  // the k-th largest key itself

  // Every key >= threshold, ascending: k - remaining larger ones plus all `equal` ties.
  const std::size_t at_least = static_cast<std::size_t>(k - remaining + equal);
  std::vector<std::uint32_t> selected(at_least + 1);
  std::size_t t = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    selected[t] = static_cast<std::uint32_t>(j);
    t += magnitude_key(values, j) >= threshold;
  }
  selected.resize(at_least);
  if (equal > remaining) {
    // More ties at the threshold than places left: keep the first `remaining` of them.
    std::size_t w = 0;
    std::int64_t ties = remaining;
    for (const std::uint32_t index : selected) {
      if (magnitude_key(values, index) > threshold || ties-- > 0) selected[w++] = index;
    }
    selected.resize(w);
  }
  return selected;
}

/// The same selection as radix_select_top_magnitudes, in about one pass instead of three
/// when k is small against n: a strided sample of the keys gives a bound that, with
/// overwhelming probability, lies below the k-th largest key; one vectorised scan
/// (collect_at_least) gathers the positions at or above it, ascending, and the exact k-th
/// largest key is found among those few. Since at least k keys reach the bound, every key of
/// the top k is among the candidates, so the result is exact and identical (ties towards lower
/// positions). Returns false, having done no harm, when the sample was unlucky (fewer than k
/// candidates) or would cost as much as a full pass.
///
/// Sample size: m = max(n / 256, 64 / p) keys for p = k / n, so that the mu = m p sampled keys
/// expected above the k-th largest number at least 64; the bound is the sample's
/// ceil(1.25 mu + 4 sqrt(mu))-th largest, about 1.25-1.75 k candidates, and falls above the
/// k-th largest key only when the sample holds 4 standard deviations too many large keys.
bool sampled_select_top_magnitudes(const float* values, std::int64_t n, std::int64_t k,
                                   std::vector<std::uint32_t>& out) {
  const double p = static_cast<double>(k) / static_cast<double>(n);
  const auto m = std::max<std::int64_t>(n / 256, static_cast<std::int64_t>(std::ceil(64.0 / p)));
  if (2 * m > n) return false;
  const std::int64_t stride = n / m;
  std::vector<std::uint32_t> keys(static_cast<std::size_t>(m));
  for (std::int64_t j = 0; j < m; ++j) keys[j] = magnitude_key(values, j * stride + stride / 2);
  const double mu = static_cast<double>(m) * p;
  const auto rank = std::clamp<std::int64_t>(
      static_cast<std::int64_t>(std::ceil(1.25 * mu + 4.0 * std::sqrt(mu))), 1, m);
  const std::uint32_t bound = kth_largest_key(keys, rank);

  std::vector<std::uint32_t> candidates, candidate_keys;
  candidates.reserve(static_cast<std::size_t>(2 * k + 4096));
  candidate_keys.reserve(candidates.capacity());
  collect_at_least(values, n, bound, 0, candidates, candidate_keys);
  const auto count = static_cast<std::int64_t>(candidates.size());
  if (count < k) return false;

  keys.assign(candidate_keys.begin(), candidate_keys.end());
  const std::uint32_t threshold = kth_largest_key(keys, k);
  // Every candidate above the threshold is kept; the remaining places go to the ties at the
  // threshold in ascending position. Branch-free: keys near the threshold are unpredictable.
  std::int64_t above = 0;
  for (const std::uint32_t key : candidate_keys) above += key > threshold;
  std::int64_t ties = k - above;
  out.resize(static_cast<std::size_t>(k) + 1);
  std::size_t w = 0;
  for (std::int64_t j = 0; j < count; ++j) {
    const std::uint32_t key = candidate_keys[j];
    const std::int64_t tie = key == threshold && ties > 0;
    ties -= tie;
    out[w] = candidates[j];
    w += static_cast<std::size_t>((key > threshold) | tie);  // at most k: out has a spare slot
  }
  out.resize(w);
  return true;
}

std::vector<std::uint32_t> select_top_magnitudes(const float* values, std::int64_t n,
                                                 std::int64_t k) {
  std::vector<std::uint32_t> selected;
  if (sampled_select_top_magnitudes(values, n, k, selected)) return selected;
  return radix_select_top_magnitudes(values, n, k);
}

}  // namespace

std::vector<std::uint32_t> TopKCodec::select_largest(const float* values, std::int64_t n,
                                                     std::int64_t k) {
  std::vector<std::uint32_t> indices;
  if (k >= n) {
    indices.resize(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
    for (std::int64_t i = 0; i < n; ++i) indices[i] = static_cast<std::uint32_t>(i);
  } else if (k > 0) {
    indices = select_top_magnitudes(values, n, k);
  }
  return indices;
}

torch::Tensor TopKCodec::select_largest_with_tensor_ops(const torch::Tensor& values, std::int64_t k) {
  const std::int64_t n = values.numel();
  // The host selection's order, on the accelerator: keys are the magnitude bits (so NaN ranks
  // above +inf), every key above the k-th largest is kept, and the places left go to the keys
  // equal to it in ascending position.
  const torch::Tensor keys = values.contiguous().view(torch::kInt).bitwise_and(0x7fffffff);
  torch::Tensor keep;
  if (k >= n) {
    keep = torch::ones({n}, keys.options().dtype(torch::kBool));
  } else {
    const torch::Tensor threshold = std::get<0>(keys.topk(k, 0, true, false)).min();
    const torch::Tensor above = keys > threshold;
    const torch::Tensor ties = keys == threshold;
    const torch::Tensor places = k - above.sum();
    keep = above.logical_or(ties.logical_and(ties.cumsum(0) <= places));
  }
  return keep.nonzero().view({-1});
}

Bytes TopKCodec::encode_with_tensor_ops(const torch::Tensor& grad, std::int64_t k) {
  const std::int64_t n = grad.numel();
  const torch::Tensor indices = select_largest_with_tensor_ops(grad, k);
  const torch::Tensor values = grad.index_select(0, indices).to(torch::kCPU);
  const torch::Tensor host_indices = indices.to(torch::kInt).to(torch::kCPU);
  if (host_indices.numel() != k) {
    throw std::logic_error("topk encode: the accelerator selected " +
                           std::to_string(host_indices.numel()) + " entries, not " +
                           std::to_string(k));
  }
  ByteWriter writer(payload_size(static_cast<std::uint64_t>(k)));
  write_header(writer, CodecId::kTopK, kFormatVersion, static_cast<std::uint64_t>(n));
  writer.u32(static_cast<std::uint32_t>(k));
  writer.u32_array(static_cast<const std::uint32_t*>(host_indices.data_ptr()),
                   static_cast<std::size_t>(k));
  writer.f32_array(values.data_ptr<float>(), static_cast<std::uint64_t>(k));
  return writer.take();
}

Bytes TopKCodec::encode(const torch::Tensor& grad) {
  check_gradient(grad, "topk encode", /*on_device=*/true);
  const std::int64_t n = grad.numel();
  if (static_cast<std::uint64_t>(n) > kMaxAddressable) {
    throw std::invalid_argument("topk encode: " + std::to_string(n) +
                                " elements do not fit u32 indices (at most 2^32)");
  }
  const std::int64_t k = k_for(n);
  set_last_density(n > 0 ? static_cast<double>(k) / static_cast<double>(n) : 1.0);
  if (!grad.device().is_cpu() && k > 0) return encode_with_tensor_ops(grad, k);
  const float* values = grad.data_ptr<float>();

  std::vector<std::uint32_t> indices;
  if (k == n) {  // ratio 1 (or tiny n): everything, in order
    indices.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) indices[i] = static_cast<std::uint32_t>(i);
  } else if (k > 0) {
    indices = select_top_magnitudes(values, n, k);
  }

  ByteWriter writer(payload_size(static_cast<std::uint64_t>(k)));
  write_header(writer, CodecId::kTopK, kFormatVersion, static_cast<std::uint64_t>(n));
  writer.u32(static_cast<std::uint32_t>(k));
  writer.u32_array(indices.data(), indices.size());
  std::uint8_t* dst = writer.extend(4 * static_cast<std::size_t>(k));
  for (std::int64_t j = 0; j < k; ++j) store_f32_le(dst + 4 * j, values[indices[j]]);
  return writer.take();
}

namespace {

// A validated topk payload: its element count and the k (index, value) pairs, ascending.
struct TopKEntries {
  std::uint64_t n = 0;
  std::uint64_t k = 0;
  const std::uint8_t* indices = nullptr;
  const std::uint8_t* values = nullptr;
};

TopKEntries read_sparse(ByteSpan payload, std::uint64_t max_elements) {
  ByteReader reader(payload, kWhat);
  const PayloadHeader h = read_header(reader, CodecId::kTopK, "topk", TopKCodec::kFormatVersion);
  TopKEntries e;
  e.n = h.numel;
  const std::uint64_t limit = std::min(max_elements, kMaxAddressable);
  if (e.n > limit) {
    reader.fail("element count " + std::to_string(e.n) + " exceeds this decoder's limit of " +
                std::to_string(limit));
  }
  e.k = reader.u32("k");
  if (e.k > e.n) {
    reader.fail("k = " + std::to_string(e.k) + " exceeds the element count " + std::to_string(e.n));
  }
  // Exact size before touching anything else: 8 bytes per entry (u32 index + f32 value).
  if (reader.remaining() != 8 * e.k) {
    std::ostringstream msg;
    msg << "size mismatch: k = " << e.k << " needs " << 8 * e.k << " bytes after offset "
        << reader.offset() << ", have " << reader.remaining();
    reader.fail(msg.str());
  }
  e.indices = reader.take(e.k, 4, "indices");
  e.values = reader.take(e.k, 4, "values");
  reader.expect_end();
  std::uint64_t prev = 0;
  for (std::uint64_t i = 0; i < e.k; ++i) {
    const std::uint64_t index = load_u32_le(e.indices + 4 * i);
    if (index >= e.n) {
      reader.fail("index " + std::to_string(index) + " at position " + std::to_string(i) +
                  " is out of range for " + std::to_string(e.n) + " elements");
    }
    if (i > 0 && index <= prev) {
      reader.fail("indices not strictly increasing at position " + std::to_string(i) + " (" +
                  std::to_string(prev) + " then " + std::to_string(index) +
                  "); duplicate or unsorted");
    }
    prev = index;
  }
  return e;
}

}  // namespace

torch::Tensor TopKCodec::decode_sparse(ByteSpan payload, std::uint64_t max_elements) {
  const TopKEntries e = read_sparse(payload, max_elements);
  torch::Tensor out = torch::zeros({static_cast<std::int64_t>(e.n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  for (std::uint64_t i = 0; i < e.k; ++i) {
    dst[load_u32_le(e.indices + 4 * i)] = load_f32_le(e.values + 4 * i);
  }
  return out;
}

torch::Tensor TopKCodec::decode_to(ByteSpan payload, const c10::Device& device) const {
  // Only the k entries cross to the accelerator; the dense tensor is filled there.
  const TopKEntries e = read_sparse(payload, max_elements_);
  std::vector<std::int64_t> index(e.k);
  std::vector<float> value(e.k);
  for (std::uint64_t i = 0; i < e.k; ++i) {
    index[i] = load_u32_le(e.indices + 4 * i);
    value[i] = load_f32_le(e.values + 4 * i);
  }
  return scatter_to(e.n, index, value, device);
}

torch::Tensor TopKCodec::decode(ByteSpan payload) const {
  return decode_sparse(payload, max_elements_);
}

CodecWork TopKCodec::work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const {
  const double n = static_cast<double>(numel);
  const double k = static_cast<double>(k_for(numel));
  const double bytes = static_cast<double>(payload_bytes);
  switch (op) {
    case CodecOp::kEncode:
      return CodecWork::selection(n, k) + CodecWork::memory(4 * n + bytes) + CodecWork::gather(n, k);
    case CodecOp::kDecode:
      return CodecWork::memory(bytes + 4 * n) + CodecWork::gather(n, k);
    default:
      return Codec::work(op, numel, payload_bytes);
  }
}

}  // namespace gradwire
