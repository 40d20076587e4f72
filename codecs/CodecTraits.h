// What a codec is, as opposed to what it does: declared once, when the codec is made, as one
// plain struct. The collectives, the training setup and the transports read these fields; a
// decorator (error feedback, the zstd stage, the timing decorators) derives its own from its
// inner codec's when it is built, so it has nothing to forward.
#pragma once

#include <string>

#include "common/LossTolerance.h"

namespace gradwire {

/// How payloads of different workers are combined. The collectives pick their algorithm from
/// this declaration rather than from the codec's name.
enum class Aggregation {
  kSummable,        ///< payloads add in the compressed domain (dense fp32, fp16, ...)
  kDecodeThenSum,   ///< decode every payload, then add the tensors (top-k, ...)
};

struct CodecTraits {
  /// Registry name, e.g. "none", "topk" (a decorator keeps its inner codec's: it changes what
  /// is sent, not the wire format).
  std::string name;
  /// Summable codecs also implement Codec::accumulate.
  Aggregation aggregation = Aggregation::kDecodeThenSum;
  /// True when encode() also takes a gradient that lives on an accelerator (a CUDA tensor)
  /// and computes there, so that only the payload crosses to host memory. False: the caller
  /// copies the gradient to the host first (codec_input in codecs/GradientChecks.h). A codec
  /// that says true writes the same bytes from either place (tests/gpu/gpu_test.cpp).
  bool encodes_on_device = false;
  /// True when the codec keeps gradient momentum itself (DGC's momentum correction): the
  /// optimizer must then not apply momentum a second time.
  bool applies_momentum = false;
  /// True when encode_chunks computes each chunk from that chunk's own elements, at a cost in
  /// proportion to its payload, so a chunk may leave as soon as its share of the encode is
  /// done (GradiVeQ's slice pipelining). The ring then encodes the chunks in the order its
  /// reduce-scatter sends them and sends each one while the next is encoded. Summable codecs
  /// only.
  bool pipelines_chunks = false;
  /// Whether this codec's payloads can be decoded with parts lost on a lossy transport (see
  /// common/LossTolerance.h). The default: no, every byte must arrive.
  LossTolerance loss_tolerance{};
};

}  // namespace gradwire
