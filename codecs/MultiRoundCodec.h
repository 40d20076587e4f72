// Codecs whose exchange takes several communication rounds per step.
//
// PowerSGD all-reduces P, orthogonalises it, then all-reduces Q; Learned Gradient Compression
// first spreads the leader's top-k indices, then reduces values or latent codes at those
// indices. Such a codec describes each round as one of three collective operations and the
// collective (ring all-reduce or parameter server, nodes/) carries it over the simulated
// network, so every round's bytes cross ns-3 and are counted:
//
//   kSum       every worker contributes a float32 vector of the same length; all receive the
//              sum. Carried as dense fp32 payloads that are added in the compressed domain
//              (ring: reduce-scatter + all-gather; PS: the server adds and sends the sum back).
//   kBroadcast the root's bytes reach every other worker (ring: forwarded hop by hop; PS: via
//              the server, which may look at them with observe_broadcast()).
//   kReduce    every worker contributes bytes; whoever aggregates (each worker on a ring after
//              an all-gather, the server on a PS) calls reduce_round() on all of them, which
//              returns their decoded sum. For non-linear decoders that need every payload at
//              once (LGC's side information).
//
// A step runs: begin_exchange(grad) -> round 0; the collective performs it and hands the
// outcome to continue_exchange(0, outcome) -> round 1 or nothing; ... ; exchange_result()
// then returns the update every worker applies (already averaged, like Codec::finalize).
// Rounds happen in the same order on every worker, so all workers' codecs must make the same
// decisions from shared information only (step counters, seeds, aggregated results).
//
// Codec::encode / decode of a multi-round codec remain the single-worker form of the exchange
// (what `gradwire codec encode` and the asynchronous parameter server use).
#pragma once

#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "codecs/Codec.h"

namespace gradwire {

enum class RoundOp {
  kSum,        ///< all-reduce (sum) of a float32 vector
  kBroadcast,  ///< the root worker's bytes to every worker
  kReduce,     ///< every worker's bytes, combined by reduce_round() wherever aggregation happens
};

/// One worker's part of one round.
struct Round {
  RoundOp op = RoundOp::kSum;
  int root = 0;        ///< kBroadcast: the rank whose payload everyone receives
  at::Tensor values;   ///< kSum: this worker's 1-D float32 contribution (equal length everywhere)
  Bytes payload;       ///< kBroadcast (root only) and kReduce: this worker's bytes
};

/// What a round delivered to a worker.
struct RoundOutcome {
  at::Tensor sum;      ///< kSum: sum of all workers' values; kReduce: reduce_round()'s result
  Bytes broadcast;     ///< kBroadcast: the root's payload (the root gets its own back)
};

class MultiRoundCodec : public Codec {
 public:
  using Codec::Codec;

  /// Starts this worker's exchange for a new step with its flat gradient; returns round 0.
  virtual Round begin_exchange(const at::Tensor& grad) = 0;

  /// Hands over the outcome of round `round`; returns the next round, or nothing when the
  /// step's update is ready.
  virtual std::optional<Round> continue_exchange(int round, RoundOutcome&& outcome) = 0;

  /// The update to apply after the last round (the workers' mean, or the codec's estimate).
  virtual at::Tensor exchange_result() = 0;

  /// kReduce rounds: the sum of every worker's decoded contribution (`payloads[r]` from rank
  /// r). Called on each ring worker's instance, or on the server's instance (rank -1) of a
  /// parameter server. Throws DecodeError on malformed payloads.
  virtual at::Tensor reduce_round(int round, const std::vector<ByteSpan>& payloads);

  /// The work of one call of the exchange (codecs/CodecWork.h), asked right after it ran:
  /// call 0 is begin_exchange, call r + 1 is continue_exchange(r, ...), so the calls of one
  /// step are numbered 0, 1, ... in order; exchange_result() only hands over what the last call
  /// computed and declares nothing. `numel` is the gradient's element count. The default asks
  /// work(CodecOp::kRound, numel, 0), the same for every call.
  virtual CodecWork round_work(int call, std::int64_t numel) const;

  /// The work of reduce_round(round, payloads) that just returned a tensor of `numel` elements
  /// from `payloads` payloads of `payload_bytes` bytes in all. The default decodes each
  /// (work(kDecode, numel, its share of the bytes)) and adds them: read two, write one float
  /// per element and addition after the first.
  virtual CodecWork reduce_work(int round, std::int64_t numel, std::size_t payloads,
                                std::uint64_t payload_bytes) const;

  /// kBroadcast rounds passing through an aggregator that does not otherwise take part (the
  /// parameter server's instance), so it can keep side information for later kReduce rounds.
  virtual void observe_broadcast(int /*round*/, ByteSpan /*payload*/) {}
};

}  // namespace gradwire
