// The compact sparse wire format (CodecId::kCompactSparse) shared by the sparsifiers (dgc,
// gradient_dropping, sdagc), plus the index-section and fp16 helpers AdaComp reuses.
//
// Body after the 12-byte header (field by field in codecs/README.md):
//   u8 index coding | u8 value format | u32 k | u32 index bytes | index section | k values
// Indices are strictly ascending and travel as gaps g_0 = i_0, g_j = i_j - i_{j-1} - 1, so any
// gap sequence decodes to a strictly ascending list and consecutive indices (a dense bias run)
// cost a zero gap. Three codings, chosen per payload by size (smallest wins, ties to the lower
// id): 0 plain u32 indices, 1 LEB128 varint gaps, 2 bit-packed: u8 w, the first index as u32,
// then the k-1 further gaps in w bits each (ceil((k-1)w/8) bytes, least significant bit
// first; w = bits of the largest of those gaps), 3 runs of consecutive indices as LEB128 pairs
// (gap before the run, run length - 1). Values are float32 or IEEE binary16.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/wire/WireFormat.h"

namespace gradwire {

enum class IndexCoding : std::uint8_t {
  kPlain32 = 0,
  kVarintGaps = 1,
  kBitPackedGaps = 2,
  kVarintRuns = 3,  ///< (gap, run length - 1) varint pairs: dense runs (biases) cost ~2 bytes
};
enum class ValueFormat : std::uint8_t { kFp32 = 0, kFp16 = 1 };

inline std::size_t value_bytes(ValueFormat f) { return f == ValueFormat::kFp16 ? 2 : 4; }

/// IEEE binary16 conversions: round to nearest even, overflow to inf, NaN stays NaN.
std::uint16_t float_to_half(float f);
float half_to_float(std::uint16_t h);
/// The float a value becomes after travelling in format `f` (identity for fp32).
inline float round_to_format(float v, ValueFormat f) {
  return f == ValueFormat::kFp16 ? half_to_float(float_to_half(v)) : v;
}

/// Exact size in bytes of the index section of `k` strictly ascending indices in `coding`.
std::size_t index_section_size(IndexCoding coding, const std::uint32_t* indices, std::size_t k);
/// The smallest coding for these indices (ties go to the lower id), from one pass over them;
/// `section_size` (optional) receives its index_section_size.
IndexCoding choose_index_coding(const std::uint32_t* indices, std::size_t k,
                                std::size_t* section_size = nullptr);
/// Appends the index section (coding already chosen). `section_size`, when not
/// kUnknownSectionSize, must be index_section_size(coding, indices, k) (saves recounting it).
constexpr std::size_t kUnknownSectionSize = ~std::size_t{0};
void write_index_section(ByteWriter& w, IndexCoding coding, const std::uint32_t* indices,
                         std::size_t k, std::size_t section_size = kUnknownSectionSize);
/// Reads exactly `section_bytes` holding `k` indices in `coding`; validates that every index
/// is < n and that the section is consumed exactly. Returns the ascending indices.
std::vector<std::uint32_t> read_index_section(ByteReader& r, IndexCoding coding, std::size_t k,
                                              std::size_t section_bytes, std::uint64_t n);

/// Writes a complete compact-sparse payload: n elements, k entries at strictly ascending
/// `indices` (each < n; not re-checked) with `values` (k floats, written in `format`).
/// `id` is kCompactSparse unless a codec reuses this body under its own id.
Bytes encode_compact_sparse(std::uint64_t n, const std::uint32_t* indices, const float* values,
                            std::size_t k, ValueFormat format,
                            CodecId id = CodecId::kCompactSparse);

/// Decoded entries of a compact-sparse payload.
struct SparseEntries {
  std::uint64_t n = 0;
  std::vector<std::uint32_t> indices;
  std::vector<float> values;
};

/// Decodes and validates a compact-sparse payload (header, n <= max_elements, coding, value
/// format, k <= n, exact sizes, indices in range). Throws DecodeError naming `what`.
SparseEntries decode_compact_entries(ByteSpan payload, std::uint64_t max_elements,
                                     const char* what = "compact sparse payload",
                                     CodecId id = CodecId::kCompactSparse);
/// The same, scattered into a dense float32 tensor of n elements (zero elsewhere).
at::Tensor decode_compact_sparse(ByteSpan payload, std::uint64_t max_elements,
                                 const char* what = "compact sparse payload");

/// A dense float32 tensor of n elements on `device`, zero except values[j] at indices[j]: only
/// the k entries are copied there.
at::Tensor scatter_to(std::uint64_t n, const std::vector<std::int64_t>& indices,
                      const std::vector<float>& values, const c10::Device& device);

/// Payload bytes of the compact format for k entries at these indices (header included).
std::size_t compact_sparse_size(const std::uint32_t* indices, std::size_t k, ValueFormat format);

}  // namespace gradwire
