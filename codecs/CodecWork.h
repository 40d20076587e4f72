// The work a codec operation does, declared by the codec, and the rule that turns it into
// seconds on a device. The simulator charges codec operations to the device that runs them,
// either as measured wall time or, for runs that must repeat bit for bit, from these
// declarations (codecs/TimedCodec.h). The declarations are a model: each codec states how many
// passes over memory it makes, what arithmetic it does and what it selects, from its own code
// (codecs/README.md, "Declared work and codec time", has the table).
//
// The rule (seconds_on):
//   seconds = memory_bytes / memory_bandwidth + (flops + select_compares) / flops_per_s
// Memory and arithmetic are added rather than overlapped (a roofline would take the larger):
// codec kernels alternate short arithmetic bursts with streaming passes, and adding the two is
// the conservative, monotone choice that keeps every declared term visible in the result.
// A selection's compares run at the device's scalar rate, one compare per operation.
//
// Selection: keeping the k largest of n elements is declared as n elements passed through a
// selection costing n * log2(k) compares (a heap or tournament selection, what a comparison
// top-k does; at least one compare per element, so log2 is taken of max(k, 2)). gradwire's own
// CPU select (TopKCodec) is a radix/sampled select of one to three passes, which its memory
// term already counts; the log2(k) compares model a comparison-based top-k on the simulated
// device, as the cost the literature quotes for top-k.
#pragma once

#include <cstdint>

namespace gradwire {

/// The operations charged separately. kRound covers each call of a multi-round exchange
/// (begin_exchange, continue_exchange, reduce_round); kObserve is observe_aggregate (codecs
/// that learn from the applied update, GradiVeQ's basis fit).
enum class CodecOp { kEncode, kDecode, kAccumulate, kFinalize, kRound, kObserve };

/// "encode", "decode", ... (for messages and metrics).
const char* codec_op_name(CodecOp op);

/// Random numbers are declared as arithmetic: the counter hash of quant::Dither::hash is ten
/// integer operations and the float conversion two more.
constexpr double kFlopsPerRandomNumber = 12.0;

/// Bytes a gather or scatter of one element at a random position moves: one 64-byte cache
/// line, not 4 bytes, as long as the positions are sparse (see CodecWork::gather).
constexpr double kCacheLineBytes = 64.0;

struct CodecWork {
  double memory_bytes = 0;     ///< bytes read + written in passes over memory
  double flops = 0;            ///< arithmetic: products, norms, random numbers (12 each), ...
  double select_elements = 0;  ///< elements passed through a top-k style selection
  double select_compares = 0;  ///< their compares: n * log2(max(k, 2)) per selection

  CodecWork& operator+=(const CodecWork& other);
  /// Every field times `factor` (a work repeated `factor` times).
  CodecWork& operator*=(double factor);

  /// `bytes` read or written in passes over memory.
  static CodecWork memory(double bytes);
  /// `flops` operations of arithmetic.
  static CodecWork compute(double flops);
  /// Keeping the `k` largest of `n` elements: n elements, n * log2(max(k, 2)) compares.
  static CodecWork selection(double n, double k);
  /// Reading or writing `k` elements at scattered positions of an `n`-element float32 vector:
  /// a cache line each, but never more than one full pass (4 n bytes).
  static CodecWork gather(double n, double k);
};

CodecWork operator+(CodecWork a, const CodecWork& b);
CodecWork operator*(CodecWork a, double factor);
bool operator==(const CodecWork& a, const CodecWork& b);

/// A device's sustained rates (not peak): what a streaming kernel and a scalar loop reach.
struct CodecDevice {
  double memory_bandwidth = 0;  ///< bytes per second
  double flops_per_s = 0;       ///< operations per second
};

/// memory_bytes / memory_bandwidth + (flops + select_compares) / flops_per_s.
/// Throws std::invalid_argument if a rate is not positive and finite.
double seconds_on(const CodecWork& work, const CodecDevice& device);

}  // namespace gradwire
