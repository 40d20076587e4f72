// Pieces shared by the quantisation codecs: the per-element random source used for stochastic
// rounding, and the split of a flat gradient into per-layer segments.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codecs/Codec.h"
#include "codecs/kernels/VectorKernel.h"
#include "codecs/wire/WireFormat.h"


namespace gradwire {

struct LayerSlice;

namespace quant {

/// Counter-based uniform random numbers for stochastic rounding.
///
/// Each encode() draws one 32-bit key from a SplitMix64 stream (Steele et al., OOPSLA 2014)
/// seeded from (scenario seed, worker rank, codec id), so runs are repeatable and workers draw
/// independent roundings. Element i then uses hash(i * 0x9E3779B9 + key), where hash is
/// Chris Wellons' "lowbias32" integer mixer (constants 0x7feb352d / 0x846ca68b and shifts
/// 16/15/16 from his hash-prospector search, 2018). Being a pure function of (key, i), the
/// draws vectorise and do not depend on how a loop is split. 24 bits of the hash give a
/// uniform u in [0, 1) with resolution 2^-24, which bounds the bias of any stochastic rounding
/// p -> [u < p] by 2^-24 per element.
class Dither {
 public:
  Dither(std::uint64_t seed, int rank, CodecId codec);

  /// A fresh key for one encode call.
  std::uint32_t next_key();

  /// The stream position, for Codec::save_state / load_state.
  std::uint64_t state() const { return state_; }
  void set_state(std::uint64_t state) { state_ = state; }

  /// Saves {"dither": position} under `codec` (CodecState format) / restores it; empty bytes
  /// restore `initial`.
  Bytes save(const std::string& codec) const;
  void load(ByteSpan bytes, const std::string& codec, std::uint64_t initial);

  static inline std::uint32_t hash(std::uint32_t key, std::uint32_t i) {
    std::uint32_t x = i * 0x9E3779B9u + key;
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
  }
  /// Uniform float in [0, 1) (multiples of 2^-24).
  static inline float uniform(std::uint32_t key, std::uint32_t i) {
    return static_cast<float>(hash(key, i) >> 8) * 0x1p-24f;
  }

 private:
  std::uint64_t state_;
};

/// A contiguous run of the flat gradient quantised with its own scale(s).
struct Segment {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint32_t groups = 1;  ///< equal contiguous groups (1-bit SGD's per-column values)
};

/// How a gradient is cut into segments.
enum class Granularity {
  kTensor,  ///< one segment for the whole encoded tensor
  kLayer,   ///< one segment per model parameter tensor
  kColumn,  ///< per layer, and inside a layer of rank >= 2 one group per output unit
};

/// Segments for an encoded tensor of `n` elements. The model layout is used only when it
/// describes exactly this tensor (the layers tile [0, n) in order); a slice of the gradient
/// (ring chunks) or a tool without layout gets one segment. Empty layers are skipped.
std::vector<Segment> segments_for(std::uint64_t n, const std::vector<LayerSlice>& layers,
                                  Granularity granularity);

/// Reads a segment length (u64) and checks it against the elements still unassigned, so a
/// table can never claim more elements than the header states.
std::uint64_t read_segment_length(ByteReader& reader, std::uint64_t unassigned);

/// Sum of squares, sum of absolute values, maximum |x| and whether a NaN was seen, for
/// x[0..n). Eight float lanes over blocks of 1024 (so the loop vectorises and keeps eight
/// independent add chains), blocks summed in double: accurate for any n.
struct Moments {
  double sum = 0.0;
  double sum_sq = 0.0;
  double sum_abs = 0.0;
  float max_abs = 0.0f;
  std::uint64_t non_negative = 0;  ///< elements whose sign bit is clear (as bits::pack_signs)
  bool nan = false;
};
Moments moments(const float* x, std::uint64_t n);

/// The sum of squares of x[0..n) (what moments(x, n).sum_sq holds, up to the order of the
/// float additions), at a fraction of the cost; accurate for any n as moments() is.
double sum_squares(const float* x, std::uint64_t n);

/// Adds the moments of x[0..n) into `m`, block by block exactly as moments() does: calling
/// it on consecutive ranges whose lengths (except the last) are multiples of 1024 gives
/// moments() of their union bit for bit.
void accumulate_moments(Moments& m, const float* x, std::uint64_t n);

/// into += part (sums added, maximum and NaN flag combined).
void add_moments(Moments& into, const Moments& part);

/// Elements from which a pass is split over LibTorch's intra-op threads
/// (at::get_num_threads()): below it, waking threads costs more than it saves.
constexpr std::uint64_t kParallelMin = std::uint64_t{1} << 18;

/// Runs fn(begin, end) over [0, count) in contiguous pieces, on up to at::get_num_threads()
/// threads when `work` (elements touched) >= kParallelMin and we are not already inside a
/// parallel region; otherwise one call fn(0, count). Piece bounds other than 0 and `count`
/// are multiples of `align`. fn may run concurrently on different pieces, so it must write
/// only what its piece owns. Exceptions propagate to the caller.
void parallel_ranges(std::uint64_t count, std::uint64_t align, std::uint64_t work,
                     const std::function<void(std::uint64_t, std::uint64_t)>& fn);

/// moments() for large tensors: fixed blocks of 2^16 elements (in parallel when large),
/// combined in block order, so the result does not depend on the number of threads.
Moments moments_parallel(const float* x, std::uint64_t n);

/// One pass over x[0..n): the moments of each group (consecutive ranges ending at
/// `group_ends`, ascending, the last == n) into out[g], and the sign bits of every element
/// into `signs` (bits::pack_signs layout, ceil(n/8) bytes, padding zero). The tensor is walked
/// in windows that stay in L1 between the two uses (in parallel on large tensors); a group's
/// window parts are added in window order, so results do not depend on the thread count.
void grouped_moments_and_signs(const float* x, std::uint64_t n,
                               const std::vector<std::uint64_t>& group_ends, Moments* out,
                               std::uint8_t* signs);

/// bits::pack_signs over x[0..n), split over threads on large tensors.
void pack_signs_parallel(const float* x, std::uint64_t n, std::uint8_t* signs);

/// Writes `pos` where the sign bit of element i is 1 and `neg` where it is 0, for n elements
/// (bit i of the LSB-first stream), branch-free: sign bits of real gradients are random, and
/// a data-dependent branch per element mispredicts half the time.
void expand_signs(const std::uint8_t* signs, std::uint64_t first_bit, std::uint64_t n, float pos,
                  float neg, float* dst);

/// The 32-bit element index used for dithering (wraps for tensors above 2^32 elements, which
/// only reuses random numbers 4 billion elements apart).
inline std::uint32_t dither_index(std::uint64_t i) { return static_cast<std::uint32_t>(i); }

}  // namespace quant
}  // namespace gradwire
