#include "codecs/quantize/QuantizerSupport.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <ATen/Parallel.h>

#include "codecs/CodecRegistry.h"
#include "codecs/CodecState.h"
#include "codecs/wire/BitPacking.h"
#include "common/SplitMix64.h"

namespace gradwire {
namespace quant {

namespace {
std::uint64_t splitmix64(std::uint64_t& state) { return splitmix64_next(state); }
}  // namespace

Dither::Dither(std::uint64_t seed, int rank, CodecId codec) : state_(seed) {
  // Fold rank and codec into the stream start: different workers and codecs never share a
  // stream even with the same scenario seed.
  std::uint64_t s = seed ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(rank)) << 32) ^
                    (static_cast<std::uint64_t>(codec) << 8);
  state_ = splitmix64(s);
}

Bytes Dither::save(const std::string& codec) const {
  CodecState st(codec);
  st.put_u64("dither", state_);
  return st.serialize();
}

void Dither::load(ByteSpan bytes, const std::string& codec, std::uint64_t initial) {
  if (bytes.size == 0) {
    state_ = initial;
    return;
  }
  const CodecState st = CodecState::parse(bytes, codec);
  if (!st.has("dither")) throw DecodeError(codec + " state: no dither position");
  state_ = st.u64("dither");
}

std::uint32_t Dither::next_key() { return static_cast<std::uint32_t>(splitmix64(state_) >> 32); }

std::vector<Segment> segments_for(std::uint64_t n, const std::vector<LayerSlice>& layers,
                                  Granularity granularity) {
  std::vector<Segment> out;
  bool tiles = granularity != Granularity::kTensor && !layers.empty();
  if (tiles) {
    std::uint64_t at = 0;
    for (const auto& layer : layers) {
      if (layer.offset < 0 || static_cast<std::uint64_t>(layer.offset) != at || layer.numel() < 0) {
        tiles = false;
        break;
      }
      at += static_cast<std::uint64_t>(layer.numel());
    }
    tiles = tiles && at == n;
  }
  if (!tiles) {
    if (n > 0) out.push_back(Segment{0, n, 1});
    return out;
  }
  for (const auto& layer : layers) {
    const auto len = static_cast<std::uint64_t>(layer.numel());
    if (len == 0) continue;
    Segment s{static_cast<std::uint64_t>(layer.offset), len, 1};
    if (granularity == Granularity::kColumn && layer.shape.size() >= 2 && layer.shape[0] > 0 &&
        static_cast<std::uint64_t>(layer.shape[0]) <= 0xffffffffu) {
      // PyTorch stores a weight as [out, in, ...]: row r (contiguous) holds every weight into
      // output unit r.
      s.groups = static_cast<std::uint32_t>(layer.shape[0]);
    }
    out.push_back(s);
  }
  return out;
}

namespace {

// GCC/Clang vector extensions: the moments loop below is written with them because the
// auto-vectoriser turns the equivalent scalar lane loop into a slow interleaved one.
typedef float F8 __attribute__((vector_size(32)));
typedef std::int32_t I8 __attribute__((vector_size(32)));

// Sum of the eight lanes, pairwise.
inline float hsum(F8 v) { return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7])); }

// The kernel of accumulate_moments: per block of 1024, sixteen float lanes in two vectors
// (lane j takes elements 16k + j: independent add chains that hide the adds' latency), the
// lanes reduced pairwise and added into the double sums block by block. Maximum and sign are taken
// from the bit patterns (integer compares): |x| orders like its bits, and "non-negative"
// means the sign bit is clear. Returns the largest |x| bit pattern seen.
GRADWIRE_VECTOR_KERNEL std::int32_t moments_kernel(Moments& m, const float* x, std::uint64_t n) {
  constexpr std::uint64_t kBlock = 1024;
  const F8 fzero = {0, 0, 0, 0, 0, 0, 0, 0};
  const I8 izero = {0, 0, 0, 0, 0, 0, 0, 0};
  I8 max_lo = izero, max_hi = izero;
  std::int32_t tail_max = 0;
  for (std::uint64_t start = 0; start < n; start += kBlock) {
    const std::uint64_t end = std::min(n, start + kBlock);
    const std::uint64_t whole = start + (end - start) / 16 * 16;
    F8 s_lo = fzero, s_hi = fzero, q_lo = fzero, q_hi = fzero, a_lo = fzero, a_hi = fzero;
    I8 c_lo = izero, c_hi = izero;
    for (std::uint64_t i = start; i < whole; i += 16) {
      F8 v, w;
      std::memcpy(&v, x + i, sizeof v);
      std::memcpy(&w, x + i + 8, sizeof w);
      I8 bv, bw;
      std::memcpy(&bv, &v, sizeof bv);
      std::memcpy(&bw, &w, sizeof bw);
      const I8 av = bv & 0x7fffffff, aw = bw & 0x7fffffff;
      s_lo += v;
      s_hi += w;
      q_lo += v * v;
      q_hi += w * w;
      F8 fav, faw;
      std::memcpy(&fav, &av, sizeof fav);
      std::memcpy(&faw, &aw, sizeof faw);
      a_lo += fav;
      a_hi += faw;
      c_lo -= bv >= 0;  // a true comparison is -1 in every bit
      c_hi -= bw >= 0;
      max_lo = av > max_lo ? av : max_lo;
      max_hi = aw > max_hi ? aw : max_hi;
    }
    // Lanes reduced by a tree in float (a serial lane-by-lane sum into doubles cost as much
    // as the block's loads for small blocks), then the block's totals added in double; the
    // last < 16 elements of a block are added to the block's totals.
    float s0 = hsum(s_lo + s_hi), q0 = hsum(q_lo + q_hi), a0 = hsum(a_lo + a_hi);
    const I8 c = c_lo + c_hi;
    std::int32_t c0 = ((c[0] + c[4]) + (c[2] + c[6])) + ((c[1] + c[5]) + (c[3] + c[7]));
    for (std::uint64_t i = whole; i < end; ++i) {
      std::int32_t bits;
      std::memcpy(&bits, x + i, 4);
      const std::int32_t abs_bits = bits & 0x7fffffff;
      s0 += x[i];
      q0 += x[i] * x[i];
      a0 += std::fabs(x[i]);
      c0 += 1 - static_cast<std::int32_t>(static_cast<std::uint32_t>(bits) >> 31);
      tail_max = abs_bits > tail_max ? abs_bits : tail_max;
    }
    m.sum += s0;
    m.sum_sq += q0;
    m.sum_abs += a0;
    m.non_negative += static_cast<std::uint64_t>(c0);
  }
  std::int32_t top = tail_max;
  for (int j = 0; j < 8; ++j) {
    top = max_lo[j] > top ? max_lo[j] : top;
    top = max_hi[j] > top ? max_hi[j] : top;
  }
  return top;
}

// sum_squares(): per block of 1024, four independent 16-lane accumulators (one zmm register
// each on AVX-512, two ymm on AVX2: the adds' latency hidden either way), reduced in float by
// a tree, blocks added in double. Norm-only callers (QSGD's per-bucket L2 norm) skip
// moments()'s other accumulators; for 512-element buckets the per-block reduction is as
// costly as the sum itself, hence the tree.
typedef float F16 __attribute__((vector_size(64)));

GRADWIRE_VECTOR_KERNEL double sum_squares_kernel(const float* x, std::uint64_t n) {
  constexpr std::uint64_t kBlock = 1024;
  constexpr int kChains = 4;
  double sum_sq = 0.0;
  for (std::uint64_t start = 0; start < n; start += kBlock) {
    const std::uint64_t end = std::min(n, start + kBlock);
    const std::uint64_t whole = start + (end - start) / (16 * kChains) * (16 * kChains);
    F16 q[kChains] = {};
    for (std::uint64_t i = start; i < whole; i += 16 * kChains) {
      for (int c = 0; c < kChains; ++c) {
        F16 a;
        std::memcpy(&a, x + i + 16 * c, sizeof a);
        q[c] += a * a;
      }
    }
    const F16 t16 = (q[0] + q[1]) + (q[2] + q[3]);
    F8 lo, hi;
    std::memcpy(&lo, &t16, sizeof lo);
    std::memcpy(&hi, reinterpret_cast<const char*>(&t16) + sizeof lo, sizeof hi);
    float block = hsum(lo + hi);
    for (std::uint64_t i = whole; i < end; ++i) block += x[i] * x[i];
    sum_sq += block;
  }
  return sum_sq;
}

std::int32_t max_bits(const Moments& m) {
  std::int32_t b;
  std::memcpy(&b, &m.max_abs, 4);
  return b & 0x7fffffff;
}

void set_max_bits(Moments& m, std::int32_t top) {
  // A NaN's bits exceed infinity's (0x7f800000).
  m.nan = m.nan || top > 0x7f800000;
  std::memcpy(&m.max_abs, &top, 4);
  if (m.nan) m.max_abs = std::nanf("");
}

constexpr std::uint64_t kMomentBlock = std::uint64_t{1} << 16;
// Windows of grouped_moments_and_signs: 32 KiB of floats stay in L1 between the moments and
// the sign pass.
constexpr std::uint64_t kSignWindow = std::uint64_t{1} << 13;

}  // namespace

void accumulate_moments(Moments& m, const float* x, std::uint64_t n) {
  if (n == 0) return;
  const std::int32_t top = moments_kernel(m, x, n);
  set_max_bits(m, std::max(top, max_bits(m)));
}

double sum_squares(const float* x, std::uint64_t n) { return sum_squares_kernel(x, n); }

Moments moments(const float* x, std::uint64_t n) {
  Moments m;
  accumulate_moments(m, x, n);
  return m;
}

void add_moments(Moments& into, const Moments& part) {
  into.sum += part.sum;
  into.sum_sq += part.sum_sq;
  into.sum_abs += part.sum_abs;
  into.non_negative += part.non_negative;
  into.nan = into.nan || part.nan;
  set_max_bits(into, std::max(max_bits(into), max_bits(part)));
}

void parallel_ranges(std::uint64_t count, std::uint64_t align, std::uint64_t work,
                     const std::function<void(std::uint64_t, std::uint64_t)>& fn) {
  if (count == 0) return;
  const int threads = at::get_num_threads();
  const std::uint64_t a = std::max<std::uint64_t>(align, 1);
  if (threads <= 1 || work < kParallelMin || at::in_parallel_region() || count < 2 * a) {
    fn(0, count);
    return;
  }
  // As many pieces as threads (fewer when the work is small), each at least kParallelMin / 2
  // elements of work.
  const std::uint64_t by_work = std::max<std::uint64_t>(1, work / (kParallelMin / 2));
  const std::uint64_t pieces =
      std::min<std::uint64_t>({static_cast<std::uint64_t>(threads), by_work, count / a});
  if (pieces <= 1) {
    fn(0, count);
    return;
  }
  const auto bound = [&](std::uint64_t p) -> std::uint64_t {
    if (p >= pieces) return count;
    // count * p / pieces without overflow for any realistic count, rounded down to `a`.
    const auto at = static_cast<std::uint64_t>(static_cast<long double>(count) * p / pieces);
    return at / a * a;
  };
  at::parallel_for(0, static_cast<std::int64_t>(pieces), 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t p = b; p < e; ++p) {
      const std::uint64_t lo = bound(static_cast<std::uint64_t>(p));
      const std::uint64_t hi = bound(static_cast<std::uint64_t>(p) + 1);
      if (lo < hi) fn(lo, hi);
    }
  });
}

Moments moments_parallel(const float* x, std::uint64_t n) {
  if (n <= kMomentBlock) return moments(x, n);
  const std::uint64_t blocks = (n - 1) / kMomentBlock + 1;
  std::vector<Moments> parts(blocks);
  parallel_ranges(blocks, 1, n, [&](std::uint64_t b, std::uint64_t e) {
    for (std::uint64_t k = b; k < e; ++k) {
      const std::uint64_t start = k * kMomentBlock;
      parts[k] = moments(x + start, std::min(n, start + kMomentBlock) - start);
    }
  });
  Moments m;
  for (const Moments& p : parts) add_moments(m, p);
  return m;
}

void grouped_moments_and_signs(const float* x, std::uint64_t n,
                               const std::vector<std::uint64_t>& group_ends, Moments* out,
                               std::uint8_t* signs) {
  if (n == 0) return;
  const std::uint64_t windows = (n - 1) / kSignWindow + 1;
  struct Part {
    std::size_t group;
    Moments m;
  };
  // Window w's parts, one per group it overlaps, in group order.
  std::vector<std::vector<Part>> parts(windows);
  parallel_ranges(windows, 1, n, [&](std::uint64_t w0, std::uint64_t w1) {
    std::size_t g = static_cast<std::size_t>(
        std::upper_bound(group_ends.begin(), group_ends.end(), w0 * kSignWindow) - group_ends.begin());
    for (std::uint64_t w = w0; w < w1; ++w) {
      const std::uint64_t start = w * kSignWindow;
      const std::uint64_t end = std::min(n, start + kSignWindow);
      std::uint64_t at = start;
      while (at < end) {
        while (group_ends[g] <= at) ++g;
        const std::uint64_t stop = std::min(end, group_ends[g]);
        Part part{g, Moments{}};
        accumulate_moments(part.m, x + at, stop - at);
        parts[w].push_back(part);
        at = stop;
      }
      // Windows start on multiples of 8 elements: whole sign bytes.
      bits::pack_signs(x + start, end - start, signs + start / 8);
    }
  });
  for (std::size_t g = 0; g < group_ends.size(); ++g) out[g] = Moments{};
  for (const auto& window : parts) {
    for (const Part& p : window) add_moments(out[p.group], p.m);
  }
}

void pack_signs_parallel(const float* x, std::uint64_t n, std::uint8_t* signs) {
  parallel_ranges(n, 64, n, [&](std::uint64_t b, std::uint64_t e) {
    bits::pack_signs(x + b, e - b, signs + b / 8);
  });
}

namespace {

// expand_signs over whole sign bytes: the eight outputs of a byte are one 8-lane vector
// (broadcast, variable shift, mask, select) in the AVX2 and AVX-512 builds.
GRADWIRE_VECTOR_KERNEL void expand_sign_bytes(const std::uint8_t* bytes, std::uint64_t count, std::uint32_t nb,
                                              std::uint32_t diff, float* dst) {
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint32_t byte = bytes[k];
    for (unsigned j = 0; j < 8; ++j) {
      const std::uint32_t out = nb ^ (diff & (0u - ((byte >> j) & 1u)));
      std::memcpy(dst + 8 * k + j, &out, 4);
    }
  }
}

}  // namespace

void expand_signs(const std::uint8_t* signs, std::uint64_t first_bit, std::uint64_t n, float pos,
                  float neg, float* dst) {
  std::uint32_t pb, nb;
  std::memcpy(&pb, &pos, 4);
  std::memcpy(&nb, &neg, 4);
  const std::uint32_t diff = pb ^ nb;
  std::uint64_t i = 0;
  // Unaligned head, bit by bit.
  for (; i < n && (first_bit + i) % 8 != 0; ++i) {
    const std::uint64_t b = first_bit + i;
    const std::uint32_t bit = (signs[b / 8] >> (b % 8)) & 1u;
    const std::uint32_t out = nb ^ (diff & (0u - bit));
    std::memcpy(dst + i, &out, 4);
  }
  // Whole bytes: eight outputs per sign byte.
  const std::uint64_t whole = (n - i) / 8;
  expand_sign_bytes(signs + (first_bit + i) / 8, whole, nb, diff, dst + i);
  i += 8 * whole;
  for (; i < n; ++i) {
    const std::uint64_t b = first_bit + i;
    const std::uint32_t bit = (signs[b / 8] >> (b % 8)) & 1u;
    const std::uint32_t out = nb ^ (diff & (0u - bit));
    std::memcpy(dst + i, &out, 4);
  }
}

std::uint64_t read_segment_length(ByteReader& reader, std::uint64_t unassigned) {
  const std::uint64_t len = reader.u64("segment length");
  if (len == 0 || len > unassigned) {
    reader.fail("segment length " + std::to_string(len) + " is 0 or exceeds the " +
                std::to_string(unassigned) + " elements not yet covered");
  }
  return len;
}

}  // namespace quant
}  // namespace gradwire
