#include "codecs/wire/SparseWire.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <torch/types.h>

#include "codecs/kernels/SparseKernels.h"
#include "codecs/kernels/VectorKernel.h"

namespace gradwire {

namespace {
constexpr std::uint8_t kCompactVersion = 1;
// Indices are u32: a compact payload addresses at most 2^32 elements.
constexpr std::uint64_t kMaxAddressable = std::uint64_t{1} << 32;

inline std::uint32_t gap_at(const std::uint32_t* idx, std::size_t j) {
  return j == 0 ? idx[0] : idx[j] - idx[j - 1] - 1;
}

inline std::size_t varint_length(std::uint32_t v) {
  std::size_t len = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++len;
  }
  return len;
}

inline int bit_width(std::uint32_t v) { return v == 0 ? 0 : 32 - __builtin_clz(v); }

// Width of the bit-packed gaps: the first index travels as a u32 of its own.
int max_gap_width(const std::uint32_t* idx, std::size_t k) {
  std::uint32_t any = 0;
  for (std::size_t j = 1; j < k; ++j) any |= gap_at(idx, j);
  return bit_width(any);
}
}  // namespace

// binary16 conversion by bit manipulation (IEEE 754-2008 binary16: 1 sign, 5 exponent bits with
// bias 15, 10 mantissa bits).
std::uint16_t float_to_half(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN (keep NaN quiet and non-zero)
    return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // < half the smallest subnormal
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    // f = mant * 2^(e - 150) and a subnormal half is h * 2^-24, so h = mant >> (126 - e).
    const int shift = 126 - static_cast<int>(abs >> 23);
    std::uint32_t half = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half & 1u))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  // Normal: rebias the exponent, round the mantissa from 23 to 10 bits (nearest even).
  std::uint32_t h = ((abs - 0x38000000u) >> 13);
  const std::uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: fine
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: mant * 2^-24
      const float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
      std::memcpy(&bits, &v, sizeof bits);
      bits |= sign;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

std::size_t index_section_size(IndexCoding coding, const std::uint32_t* idx, std::size_t k) {
  switch (coding) {
    case IndexCoding::kPlain32:
      return 4 * k;
    case IndexCoding::kVarintGaps: {
      std::size_t total = 0;
      for (std::size_t j = 0; j < k; ++j) total += varint_length(gap_at(idx, j));
      return total;
    }
    case IndexCoding::kBitPackedGaps: {
      if (k == 0) return 1;
      const auto w = static_cast<std::uint64_t>(max_gap_width(idx, k));
      return 5 + static_cast<std::size_t>(((k - 1) * w + 7) / 8);
    }
    case IndexCoding::kVarintRuns: {
      std::size_t total = 0;
      for (std::size_t j = 0; j < k;) {
        std::size_t e = j + 1;
        while (e < k && idx[e] == idx[e - 1] + 1) ++e;
        total += varint_length(gap_at(idx, j)) + varint_length(static_cast<std::uint32_t>(e - j - 1));
        j = e;
      }
      return total;
    }
  }
  throw std::logic_error("unknown index coding");
}

namespace {

inline std::uint32_t varint_length_branchless(std::uint32_t v) {
  return 1u + (v >= (1u << 7)) + (v >= (1u << 14)) + (v >= (1u << 21)) + (v >= (1u << 28));
}

// The gap statistics of choose_index_coding (see count_gaps_avx512) without AVX-512.
GapCounts count_gaps_portable(const std::uint32_t* idx, std::size_t k) {
  GapCounts c;
  for (std::size_t j = 1; j < k; ++j) {
    const std::uint32_t gap = idx[j] - idx[j - 1] - 1;
    const std::uint32_t len = varint_length_branchless(gap);
    c.varint += len;
    c.any_gap |= gap;
    c.runs += gap != 0 ? len + 1 : 0;
  }
  return c;
}

// How many runs reach position `p` (p indices after their start): a run's length varint
// needs an extra byte for each of 2^7, 2^14, 2^21, 2^28 that its length - 1 reaches. Position
// p of a run is an index with idx[j] - idx[j - p] == p (all between consecutive: indices are
// strictly ascending) whose idx[j - p] starts a run.
GRADWIRE_VECTOR_KERNEL std::uint64_t count_run_positions(const std::uint32_t* idx, std::size_t k, std::size_t p) {
  if (k <= p) return 0;
  std::uint64_t count = idx[p] - idx[0] == p ? 1 : 0;
  for (std::size_t j = p + 1; j < k; ++j) {
    count += (idx[j] - idx[j - p] == p) & (idx[j - p] - idx[j - p - 1] != 1);
  }
  return count;
}

}  // namespace

IndexCoding choose_index_coding(const std::uint32_t* idx, std::size_t k, std::size_t* section_size) {
  // The sizes index_section_size gives for each coding, counted together without branches.
  std::size_t varint = 0;
  std::size_t runs = 0;
  std::uint32_t any_gap = 0;  // OR of the gaps after the first: the bit-packed width
  if (k > 0) {
    GapCounts c;
    if (!count_gaps_avx512(idx, k, c)) c = count_gaps_portable(idx, k);
    const std::size_t first = varint_length(idx[0]);
    varint = first + static_cast<std::size_t>(c.varint);
    runs = first + 1 + static_cast<std::size_t>(c.runs);
    any_gap = c.any_gap;
  }
  const std::size_t bit_packed =
      k == 0 ? 1 : 5 + static_cast<std::size_t>(((k - 1) * static_cast<std::uint64_t>(bit_width(any_gap)) + 7) / 8);
  // Long runs' extra length bytes only matter when the run coding can still win (it loses
  // ties, being the last), so they are counted only then.
  if (runs < std::min({4 * k, varint, bit_packed})) {
    for (const std::size_t p : {std::size_t{1} << 7, std::size_t{1} << 14, std::size_t{1} << 21, std::size_t{1} << 28}) {
      runs += static_cast<std::size_t>(count_run_positions(idx, k, p));
    }
  }
  const std::size_t sizes[4] = {4 * k, varint, bit_packed, runs};
  std::size_t best = 0;
  for (std::size_t c = 1; c < 4; ++c) {
    if (sizes[c] < sizes[best]) best = c;
  }
  if (section_size != nullptr) *section_size = sizes[best];
  return static_cast<IndexCoding>(best);
}

void write_index_section(ByteWriter& w, IndexCoding coding, const std::uint32_t* idx,
                         std::size_t k, std::size_t section_size) {
  const auto size = [&] {
    return section_size != kUnknownSectionSize ? section_size : index_section_size(coding, idx, k);
  };
  switch (coding) {
    case IndexCoding::kPlain32:
      w.u32_array(idx, k);
      return;
    case IndexCoding::kVarintGaps: {
      std::uint8_t* p = w.extend(size());
      for (std::size_t j = 0; j < k; ++j) {
        std::uint32_t v = gap_at(idx, j);
        while (v >= 0x80) {
          *p++ = static_cast<std::uint8_t>(v | 0x80u);
          v >>= 7;
        }
        *p++ = static_cast<std::uint8_t>(v);
      }
      return;
    }
    case IndexCoding::kBitPackedGaps: {
      const int width = max_gap_width(idx, k);
      w.u8(static_cast<std::uint8_t>(width));
      if (k == 0) return;
      w.u32(idx[0]);
      const std::size_t bytes =
          static_cast<std::size_t>(((k - 1) * static_cast<std::uint64_t>(width) + 7) / 8);
      std::uint8_t* p = w.extend(bytes);
      std::uint64_t acc = 0;
      int filled = 0;
      for (std::size_t j = 1; j < k; ++j) {
        acc |= static_cast<std::uint64_t>(gap_at(idx, j)) << filled;
        filled += width;
        while (filled >= 8) {
          *p++ = static_cast<std::uint8_t>(acc);
          acc >>= 8;
          filled -= 8;
        }
      }
      if (filled > 0) *p++ = static_cast<std::uint8_t>(acc);
      return;
    }
    case IndexCoding::kVarintRuns: {
      std::uint8_t* p = w.extend(size());
      auto put = [&p](std::uint32_t v) {
        while (v >= 0x80) {
          *p++ = static_cast<std::uint8_t>(v | 0x80u);
          v >>= 7;
        }
        *p++ = static_cast<std::uint8_t>(v);
      };
      for (std::size_t j = 0; j < k;) {
        std::size_t e = j + 1;
        while (e < k && idx[e] == idx[e - 1] + 1) ++e;
        put(gap_at(idx, j));
        put(static_cast<std::uint32_t>(e - j - 1));
        j = e;
      }
      return;
    }
  }
  throw std::logic_error("unknown index coding");
}

std::vector<std::uint32_t> read_index_section(ByteReader& r, IndexCoding coding, std::size_t k,
                                              std::size_t section_bytes, std::uint64_t n) {
  const std::size_t start = r.offset();
  const std::uint8_t* p = r.take(section_bytes, 1, "index section");
  const std::uint8_t* const end = p + section_bytes;
  std::vector<std::uint32_t> out(k);
  std::uint64_t prev_plus_one = 0;  // previous index + 1 (0 before the first)
  auto place = [&](std::size_t j, std::uint64_t index) {
    if (index >= n) {
      r.fail("index " + std::to_string(index) + " at position " + std::to_string(j) +
             " is out of range for " + std::to_string(n) + " elements");
    }
    out[j] = static_cast<std::uint32_t>(index);
  };
  switch (coding) {
    case IndexCoding::kPlain32: {
      if (section_bytes != 4 * k) {
        r.fail("plain index section of " + std::to_string(section_bytes) + " bytes for k = " +
               std::to_string(k) + " (needs " + std::to_string(4 * k) + ")");
      }
      for (std::size_t j = 0; j < k; ++j) {
        const std::uint64_t index = load_u32_le(p + 4 * j);
        if (j > 0 && index < prev_plus_one) {
          r.fail("indices not strictly increasing at position " + std::to_string(j));
        }
        place(j, index);
        prev_plus_one = index + 1;
      }
      break;
    }
    case IndexCoding::kVarintRuns: {
      auto get = [&](const char* what, std::size_t j) {
        std::uint64_t v = 0;
        for (int shift = 0;; shift += 7) {
          if (p == end) r.fail(std::string("run-length index section ends inside the ") + what + " of run " + std::to_string(j));
          const std::uint8_t byte = *p++;
          if (shift == 28 && (byte & 0xf0u) != 0) r.fail(std::string("run ") + what + " exceeds 32 bits");
          v |= static_cast<std::uint64_t>(byte & 0x7fu) << shift;
          if ((byte & 0x80u) == 0) return v;
        }
      };
      std::size_t j = 0;
      for (std::size_t run = 0; j < k; ++run) {
        const std::uint64_t gap = get("gap", run);
        const std::uint64_t extra = get("length", run);
        if (extra >= k - j) {
          r.fail("run " + std::to_string(run) + " of " + std::to_string(extra + 1) +
                 " indices overruns k = " + std::to_string(k));
        }
        std::uint64_t index = prev_plus_one + gap;
        for (std::uint64_t c = 0; c <= extra; ++c, ++j, ++index) place(j, index);
        prev_plus_one = index;
      }
      if (p != end) {
        r.fail("run-length index section has " + std::to_string(end - p) + " bytes to spare");
      }
      break;
    }
    case IndexCoding::kVarintGaps: {
      for (std::size_t j = 0; j < k; ++j) {
        std::uint64_t gap = 0;
        int shift = 0;
        while (true) {
          if (p == end) {
            r.fail("varint index section ends inside gap " + std::to_string(j) + " (section at offset " +
                   std::to_string(start) + ", " + std::to_string(section_bytes) + " bytes)");
          }
          const std::uint8_t byte = *p++;
          if (shift == 28 && (byte & 0xf0u) != 0) r.fail("varint gap " + std::to_string(j) + " exceeds 32 bits");
          gap |= static_cast<std::uint64_t>(byte & 0x7fu) << shift;
          if ((byte & 0x80u) == 0) break;
          shift += 7;
        }
        place(j, prev_plus_one + gap);
        prev_plus_one = out[j] + std::uint64_t{1};
      }
      if (p != end) {
        r.fail("varint index section has " + std::to_string(end - p) + " bytes to spare after " +
               std::to_string(k) + " gaps");
      }
      break;
    }
    case IndexCoding::kBitPackedGaps: {
      if (section_bytes < 1) r.fail("bit-packed index section lacks its width byte");
      const int width = *p++;
      if (width > 32) r.fail("bit-packed gap width " + std::to_string(width) + " exceeds 32");
      const std::uint64_t need =
          k == 0 ? 0 : 4 + ((static_cast<std::uint64_t>(k) - 1) * static_cast<std::uint64_t>(width) + 7) / 8;
      if (need != section_bytes - 1) {
        r.fail("bit-packed index section of " + std::to_string(section_bytes) + " bytes for k = " +
               std::to_string(k) + " gaps of " + std::to_string(width) + " bits (needs " +
               std::to_string(need + 1) + ")");
      }
      if (k == 0) break;
      place(0, load_u32_le(p));
      p += 4;
      prev_plus_one = out[0] + std::uint64_t{1};
      const std::uint64_t mask = width == 0 ? 0 : (std::uint64_t{1} << width) - 1;
      std::uint64_t acc = 0;
      int filled = 0;
      for (std::size_t j = 1; j < k; ++j) {
        while (filled < width) {  // need <= remaining was checked above
          acc |= static_cast<std::uint64_t>(*p++) << filled;
          filled += 8;
        }
        const std::uint64_t gap = acc & mask;
        acc = width == 0 ? acc : acc >> width;
        filled -= width;
        place(j, prev_plus_one + gap);
        prev_plus_one = out[j] + std::uint64_t{1};
      }
      break;
    }
    default:
      r.fail("unknown index coding");
  }
  return out;
}

std::size_t compact_sparse_size(const std::uint32_t* indices, std::size_t k, ValueFormat format) {
  const IndexCoding c = choose_index_coding(indices, k);
  return kPayloadHeaderSize + 10 + index_section_size(c, indices, k) + k * value_bytes(format);
}

Bytes encode_compact_sparse(std::uint64_t n, const std::uint32_t* indices, const float* values,
                            std::size_t k, ValueFormat format, CodecId id) {
  if (n > kMaxAddressable) {
    throw std::invalid_argument("compact sparse encode: " + std::to_string(n) +
                                " elements do not fit u32 indices");
  }
  const IndexCoding coding = choose_index_coding(indices, k);
  const std::size_t section = index_section_size(coding, indices, k);
  ByteWriter w(kPayloadHeaderSize + 10 + section + k * value_bytes(format));
  write_header(w, id, kCompactVersion, n);
  w.u8(static_cast<std::uint8_t>(coding));
  w.u8(static_cast<std::uint8_t>(format));
  w.u32(static_cast<std::uint32_t>(k));
  w.u32(static_cast<std::uint32_t>(section));
  write_index_section(w, coding, indices, k);
  if (format == ValueFormat::kFp32) {
    w.f32_array(values, k);
  } else {
    std::uint8_t* p = w.extend(2 * k);
    for (std::size_t j = 0; j < k; ++j) {
      const std::uint16_t h = float_to_half(values[j]);
      p[2 * j] = static_cast<std::uint8_t>(h);
      p[2 * j + 1] = static_cast<std::uint8_t>(h >> 8);
    }
  }
  return w.take();
}

SparseEntries decode_compact_entries(ByteSpan payload, std::uint64_t max_elements,
                                     const char* what, CodecId id) {
  ByteReader r(payload, what);
  const PayloadHeader h = read_header(r, id, what, kCompactVersion);
  const std::uint64_t limit = std::min(max_elements, kMaxAddressable);
  if (h.numel > limit) {
    r.fail("element count " + std::to_string(h.numel) + " exceeds this decoder's limit of " +
           std::to_string(limit));
  }
  const std::uint8_t coding = r.u8("index coding");
  if (coding > 3) r.fail("unknown index coding " + std::to_string(coding) + " (expected 0 to 3)");
  const std::uint8_t format = r.u8("value format");
  if (format > 1) r.fail("unknown value format " + std::to_string(format) + " (expected 0 or 1)");
  const std::uint64_t k = r.u32("k");
  if (k > h.numel) {
    r.fail("k = " + std::to_string(k) + " exceeds the element count " + std::to_string(h.numel));
  }
  const std::uint64_t section = r.u32("index bytes");
  const std::uint64_t vbytes = value_bytes(static_cast<ValueFormat>(format));
  if (r.remaining() != section + k * vbytes) {
    r.fail("size mismatch: " + std::to_string(section) + " index bytes + " + std::to_string(k) +
           " values of " + std::to_string(vbytes) + " bytes after offset " +
           std::to_string(r.offset()) + ", have " + std::to_string(r.remaining()));
  }
  SparseEntries e;
  e.n = h.numel;
  e.indices = read_index_section(r, static_cast<IndexCoding>(coding), static_cast<std::size_t>(k),
                                 static_cast<std::size_t>(section), h.numel);
  const std::uint8_t* v = r.take(static_cast<std::size_t>(k), static_cast<std::size_t>(vbytes), "values");
  r.expect_end();
  e.values.resize(static_cast<std::size_t>(k));
  if (format == 0) {
    for (std::size_t j = 0; j < k; ++j) e.values[j] = load_f32_le(v + 4 * j);
  } else {
    for (std::size_t j = 0; j < k; ++j) {
      e.values[j] = half_to_float(static_cast<std::uint16_t>(v[2 * j] | (v[2 * j + 1] << 8)));
    }
  }
  return e;
}

torch::Tensor scatter_to(std::uint64_t n, const std::vector<std::int64_t>& indices,
                         const std::vector<float>& values, const c10::Device& device) {
  const auto k = static_cast<std::int64_t>(indices.size());
  torch::Tensor out = torch::zeros({static_cast<std::int64_t>(n)},
                                   torch::TensorOptions().dtype(torch::kFloat).device(device));
  if (k == 0) return out;
  // from_blob views the vectors; index_put_ copies from them before this returns.
  out.index_put_({torch::from_blob(const_cast<std::int64_t*>(indices.data()), {k}, torch::kLong).to(device)},
                 torch::from_blob(const_cast<float*>(values.data()), {k}, torch::kFloat).to(device));
  return out;
}

torch::Tensor decode_compact_sparse(ByteSpan payload, std::uint64_t max_elements,
                                    const char* what) {
  const SparseEntries e = decode_compact_entries(payload, max_elements, what);
  torch::Tensor out = torch::zeros({static_cast<std::int64_t>(e.n)}, torch::kFloat);
  float* dst = out.data_ptr<float>();
  for (std::size_t j = 0; j < e.indices.size(); ++j) dst[e.indices[j]] = e.values[j];
  return out;
}

}  // namespace gradwire
