#include "codecs/QuantizerSupport.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "codecs/CodecRegistry.h"
#include "codecs/CodecState.h"

namespace gradwire {
namespace quant {

namespace {
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
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

GRADWIRE_VECTOR_KERNEL Moments moments(const float* x, std::uint64_t n) {
  // Eight lanes: lane j takes elements 8k + j. Maximum and sign are taken from the bit
  // patterns (integer compares vectorise; float ones stay branches under -ftrapping-math):
  // |x| orders like its bits, and "non-negative" means the sign bit is clear.
  Moments m;
  constexpr std::uint64_t kBlock = 1024;
  std::int32_t max_lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (std::uint64_t start = 0; start < n; start += kBlock) {
    const std::uint64_t end = std::min(n, start + kBlock);
    const std::uint64_t whole = start + (end - start) / 8 * 8;
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, q[8] = {0, 0, 0, 0, 0, 0, 0, 0}, a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::int32_t c[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (std::uint64_t i = start; i < whole; i += 8) {
      for (int j = 0; j < 8; ++j) {
        const float v = x[i + j];
        std::int32_t bits;
        std::memcpy(&bits, &v, 4);
        const std::int32_t abs_bits = bits & 0x7fffffff;
        float av;
        std::memcpy(&av, &abs_bits, 4);
        s[j] += v;
        q[j] += v * v;
        a[j] += av;
        c[j] += 1 - static_cast<std::int32_t>(static_cast<std::uint32_t>(bits) >> 31);
        max_lane[j] = abs_bits > max_lane[j] ? abs_bits : max_lane[j];
      }
    }
    for (std::uint64_t i = whole; i < end; ++i) {
      std::int32_t bits;
      std::memcpy(&bits, x + i, 4);
      const std::int32_t abs_bits = bits & 0x7fffffff;
      s[0] += x[i];
      q[0] += x[i] * x[i];
      a[0] += std::fabs(x[i]);
      c[0] += 1 - static_cast<std::int32_t>(static_cast<std::uint32_t>(bits) >> 31);
      max_lane[0] = abs_bits > max_lane[0] ? abs_bits : max_lane[0];
    }
    for (int j = 0; j < 8; ++j) {
      m.sum += s[j];
      m.sum_sq += q[j];
      m.sum_abs += a[j];
      m.non_negative += static_cast<std::uint64_t>(c[j]);
    }
  }
  std::int32_t top = 0;
  for (int j = 0; j < 8; ++j) top = max_lane[j] > top ? max_lane[j] : top;
  // A NaN's bits exceed infinity's (0x7f800000).
  m.nan = top > 0x7f800000;
  std::memcpy(&m.max_abs, &top, 4);
  if (m.nan) m.max_abs = std::nanf("");
  return m;
}

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
  for (; i + 8 <= n; i += 8) {
    const std::uint32_t byte = signs[(first_bit + i) / 8];
    for (unsigned j = 0; j < 8; ++j) {
      const std::uint32_t out = nb ^ (diff & (0u - ((byte >> j) & 1u)));
      std::memcpy(dst + i + j, &out, 4);
    }
  }
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
