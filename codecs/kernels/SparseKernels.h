// AVX-512 kernels of the sparse codecs: AdaComp's bin pass (codecs/sparsify/AdaCompCodec.h)
// and the gap counts that choose a sparse index coding (codecs/wire/SparseWire.h).
//
// Why by hand: per bin AdaComp adds the gradient into the residue, takes the bin's largest
// magnitude, then appends the positions that pass the test, with their values. The portable
// loop is compiled for the SSE2 baseline and appends through a bit mask, one set bit at a time;
// here 16 elements are tested per compare and the chosen positions and values are packed
// with one vpcompressd each (into a register, then stored whole: the memory form is slow on
// AMD cores). The previous encode's sends are settled inside the same pass, from the 16-bit
// masks of that encode's tests, instead of a scattered pass over the residue. The results are
// bit-identical to the portable loops: the same float additions and subtractions (no FMA can
// form: there is no multiply), integer maxima of the same magnitude keys, the same
// comparisons. sparsifiers_test checks AdaComp's bytes at every kernel level.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gradwire {

/// What one segment's bins gave: the sum (in double, in bin order) of the bins' largest
/// magnitudes, how many bins, how many entries were appended, how many test masks written.
struct BinScan {
  double gmax_sum = 0.0;
  std::int64_t bins = 0;
  std::size_t count = 0;
  std::size_t masks = 0;
};

/// The previous encode's sends inside one segment, whose residue still holds G and must become
/// G - sign(G) * scale: their positions (ascending), and, when `masks` is not null, the same
/// positions as the 16-bit test masks the AVX-512 scan wrote for this segment then (valid only
/// for the same segment and bin length).
struct PendingSends {
  const std::uint32_t* indices = nullptr;
  std::size_t count = 0;
  float scale = 0.0f;
  const std::uint16_t* masks = nullptr;
};

/// Test masks the AVX-512 scan writes for a segment of `length` elements in bins of `bin`:
/// one per 16 elements of each bin (the last vector of a bin may be partial).
inline std::size_t bin_scan_masks(std::int64_t length, std::int64_t bin) {
  const std::int64_t per_bin = (bin + 15) / 16;
  return static_cast<std::size_t>((length / bin) * per_bin + (length % bin + 15) / 16);
}

/// For the bins of `bin` elements of [begin, end) (the last may be shorter), in order: the
/// pending updates inside the bin, r += g, gmax = the largest |r| (NaN skipped), and, when
/// gmax > 0, every i with r_i != 0 and |r_i + g_i| >= gmax appended to `indices` (as i) and
/// `kept` (as r_i). Both need room for end - begin + 16 entries (whole vectors are stored);
/// `masks` receives bin_scan_masks(end - begin, bin) test masks (for the next scan's
/// PendingSends::masks). Returns false, doing nothing, when the CPU (or the kernel level)
/// lacks AVX-512.
bool adacomp_scan_avx512(float* r, const float* g, std::int64_t begin, std::int64_t end, std::int64_t bin,
                         const PendingSends& pending, std::uint32_t* indices, float* kept, std::uint16_t* masks,
                         BinScan& out);

/// Applies pending updates: r[i] = r[i] - (r[i] < 0 ? -scale : scale).
inline void apply_pending_sends(float* r, const std::uint32_t* indices, std::size_t count, float scale) {
  for (std::size_t j = 0; j < count; ++j) {
    const float x = r[indices[j]];
    r[indices[j]] = x - (x < 0.0f ? -scale : scale);
  }
}

/// Over the gaps idx[j] - idx[j-1] - 1 of j in [1, k): the sum of their LEB128 lengths, the
/// sum over the non-zero ones of their length + 1 (a run of the run coding starts there), and
/// their OR. Returns false, doing nothing, without AVX-512.
struct GapCounts {
  std::uint64_t varint = 0;
  std::uint64_t runs = 0;
  std::uint32_t any_gap = 0;
};
bool count_gaps_avx512(const std::uint32_t* idx, std::size_t k, GapCounts& out);

}  // namespace gradwire
