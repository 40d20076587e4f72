// What one codec object did in a run, as far as the rest of the run can see it: the size and
// header of every payload it produced, the density it reported, the work it declared, and for
// multi-round codecs the shape of every round. A run records it (codecs/RecordingCodec.h) so
// that a later run can replay the same calls without the gradients (codecs/ReplayCodec.h):
// the collectives then move payloads of the recorded sizes through a different network and
// charge the recorded work, which is all the network simulation needs of a codec.
//
// Calls that change the codec's state (encode, encode_chunks, the exchange's rounds,
// reduce_round, observe_aggregate) and finalize come in the same order in every run of one
// training, so they are logged as a sequence and replayed in order. Calls that do not change
// it (decode, accumulate) may come in another order on another network (a server decodes in
// arrival order),
// so their declared work is logged by what it depends on: (operation, element count, payload
// bytes). A key seen with two different works cannot be replayed exactly; the log says so.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "codecs/CodecWork.h"
#include "codecs/TensorSend.h"
#include "common/ByteSpan.h"

namespace gradwire {

/// A payload as the network and the receiving codec see it without its values: its size and
/// its leading header bytes (codecs/wire/WireFormat.h: the element count a decoder allocates).
struct PayloadShape {
  std::uint64_t bytes = 0;
  std::vector<std::uint8_t> head;  ///< the first min(bytes, kPayloadHeaderSize) bytes

  static PayloadShape of(ByteSpan payload);
  /// A payload of this shape: the recorded header, then zeros.
  Bytes materialise() const;
};

/// One state-changing call of a codec.
struct CodecCall {
  enum class Kind : std::uint8_t {
    kEncode = 1,        ///< encode: one payload
    kEncodeChunks = 2,  ///< encode_chunks: one payload per chunk
    kRound = 3,         ///< begin_exchange (call 0) or continue_exchange: the round it returned
    kReduce = 4,        ///< reduce_round: the element count of its result
    kObserve = 5,       ///< observe_aggregate
    kFinalize = 6,      ///< finalize: the non-zero elements of its result
  };
  Kind kind = Kind::kEncode;
  std::vector<PayloadShape> payloads;  ///< kEncode, kEncodeChunks; kRound: its payload, if any
  double density = 1.0;                ///< kEncode, kEncodeChunks, kRound: last_density() after it
  std::vector<TensorSend> tensor_sends; ///< kEncode, kEncodeChunks: last_tensor_sends() after it
  bool has_work = false;               ///< the run asked the call's declared work (timed codecs)
  CodecWork work;
  // kRound
  bool last = false;          ///< continue_exchange returned nothing (the exchange is over)
  std::uint8_t round_op = 0;  ///< RoundOp
  std::int32_t root = 0;
  std::int64_t values = 0;    ///< kRound: kSum values' length; kReduce, kFinalize: result numel;
                              ///< kRound call 0: the gradient's length
  /// Elements whose bits are not +0.0 in kFinalize's and kReduce's result, and in the sum a
  /// kRound call (continue_exchange) received: what an exact encoding of them sends.
  std::int64_t nonzero = 0;
};

/// Raised when a replayed run asks a codec for a call its log does not hold in that place:
/// the replayed run is not the recorded training.
class ReplayMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CodecCallLog {
 public:
  using WorkKey = std::tuple<std::uint8_t, std::int64_t, std::uint64_t>;  // op, numel, bytes

  std::vector<CodecCall> calls;
  /// Declared work of decode and accumulate by (op, numel, payload bytes).
  std::map<WorkKey, CodecWork> stateless_work;
  /// Set when one key declared two different works: replaying its timing is refused.
  bool ambiguous_work = false;
  /// Payloads whose decoded tensor is not as long as their header states (GradiVeQ's coded
  /// slices): the decoded length by the payload's size and header; -1 where one size and header
  /// decoded to different lengths (a replay of such a payload is refused).
  std::map<std::pair<std::uint64_t, std::vector<std::uint8_t>>, std::int64_t> decoded_numel;

  /// Records a decode's result length when it differs from the header's.
  void add_decoded(ByteSpan payload, std::int64_t numel);
  /// The length a payload decodes to: the recorded one, else its header's.
  std::int64_t decoded(ByteSpan payload) const;

  /// Records the work of a call that does not change the codec's state.
  void add_stateless_work(CodecOp op, std::int64_t numel, std::uint64_t bytes, const CodecWork& w);
  /// The recorded work of such a call; ReplayMismatch when there is none.
  CodecWork stateless(CodecOp op, std::int64_t numel, std::uint64_t bytes) const;
};

}  // namespace gradwire
