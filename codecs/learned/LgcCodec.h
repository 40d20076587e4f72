// `lgc_ps` and `lgc_ring`: Learned Gradient Compression (L. Abrahamyan, Y. Chen, G. Bekoulis,
// N. Deligiannis, "Learned Gradient Compression for Distributed Deep Learning", IEEE TNNLS
// 2021) as a multi-round exchange (MultiRoundCodec.h). The paper trains in three stages; so
// does this codec, counting synchronous steps (identically on every worker):
//
//   dense warm-up (`warmup_steps`)   round 0 kSum of the whole error-compensated gradient.
//   phase 1 (`phase1_steps`)          top-k with a round-robin leader, leader = step % workers:
//       round 0 kBroadcast(root leader): the leader's top-k indices of its compensated
//               gradient (lgc_ps: and its values, the side information);
//       round 1 lgc_ring: kSum of every worker's values at those indices;
//               lgc_ps:   kReduce: the non-leaders' values (the leader's already travelled);
//       rank 0 keeps the value vectors it sees as training data for the autoencoder.
//   phase 2 (the rest)                the autoencoder replaces the values by latent codes:
//       first phase-2 step: round 0 kBroadcast(root 0) of the autoencoder's weights, which
//               rank 0 trained (LgcAutoencoder.h) on its phase-1 vectors; every worker (and
//               a parameter server's instance, through observe_broadcast) loads them, so the
//               model's bytes cross the network and are counted;
//       every `ae_finetune_every` steps after it: the same round, after rank 0 fine-tuned
//               the model on the vectors it saw since the last training (its own values;
//               lgc_ps: paired with the leader's), so the code follows the gradients;
//       then the leader's indices as in phase 1, and
//       lgc_ring: kSum of the codes encoder(values), each followed by its values' L2 norm;
//               the encoder is linear, so the sum is the code of the summed values; every
//               worker decodes sum / n once and scales it down to the mean norm if above it;
//       lgc_ps:   kReduce: non-leaders send (scale, encoder(values / scale)); the aggregator
//               decodes each with the leader's values as side information and adds them to
//               the leader's values.
//   The update is the mean scattered into a dense zero vector at the shared indices.
//
// The training is codec work on rank 0's device: measured as the wall time of the call that
// trains, or declared (round_work) as the arithmetic LgcAutoencoder::training_flops states,
// so it delays the weights broadcast, and with it the step, in simulated time.
//
// Error feedback (on by default, `error_feedback`): each worker keeps the residual of what its
// contribution did not carry: everything outside the shared indices and, in phase 2, its
// values minus their reconstruction from its own code (decoded locally; for lgc_ring that is
// decoder(encoder(values)), the part of the mean this worker accounts for); a reconstruction
// further from the values than zero is counts at its best multiple in [0, 1], so the residual
// cannot grow. The registry
// cannot wrap a multi-round codec in ErrorFeedback, so the residual lives here.
//
// The single-worker form (Codec::encode / decode, used by `gradwire codec encode` and the
// asynchronous parameter server) is phase 1 with the worker as its own leader: error-
// compensated top-k values and indices in one payload; the autoencoder never runs there.
//
// Wire formats (every payload starts with the 12-byte header, codec id 32, version 1, the
// gradient's element count n), field by field in codecs/README.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecs/MultiRoundCodec.h"

namespace gradwire {

class LgcAutoencoder;

class LgcCodec : public MultiRoundCodec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;

  /// The first byte after the header says what a payload carries.
  enum class PayloadKind : std::uint8_t {
    kIndices = 1,           ///< leader's indices (lgc_ring broadcast)
    kIndicesValues = 2,     ///< leader's indices + values (lgc_ps broadcast, single-worker form)
    kValues = 3,            ///< a non-leader's values at the shared indices (lgc_ps phase 1)
    kCode = 4,              ///< a non-leader's scale + latent code (lgc_ps phase 2)
    kLeader = 5,            ///< the leader's kReduce payload: its values went in the broadcast
    kWeights = 6,           ///< the autoencoder's weights (root 0, first phase-2 step)
  };

  enum class Variant { kRing, kParameterServer };

  struct Options {
    Variant variant = Variant::kRing;
    double ratio = 0.01;           ///< top-k fraction: k = max(1, round(ratio * n))
    std::int64_t warmup_steps = 0; ///< dense steps first
    std::int64_t phase1_steps = 100;
    int ae_train_iters = 200;
    /// Phase 2: every this many steps after its first, rank 0 fine-tunes the autoencoder on
    /// the vectors it saw since the last training and broadcasts the weights again (0: never).
    std::int64_t ae_finetune_every = 100;
    int ae_finetune_iters = 50;
    double ae_lr = 1e-3;
    int downsample_layers = 3;
    int hidden_channels = 8;
    int code_channels = 2;
    bool error_feedback = true;
    std::uint64_t seed = 1;        ///< autoencoder initialisation (same on every worker)
  };

  /// `rank` -1 is a parameter server's aggregating instance. `numel` > 0 fixes the gradient
  /// length (and so k); 0 (tools) takes it from the first gradient or payload seen.
  LgcCodec(const Options& options, int rank, int workers, std::int64_t numel);
  ~LgcCodec() override;

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// Encode (the single-worker form): compensation (12n bytes), a top-k selection of k of n,
  /// the values gathered, the payload written, the residual updated at the sent entries.
  /// Decode: zero fill + scatter.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  /// Per call of the exchange (0: begin_exchange, c: continue_exchange(c - 1)): call 0 adds
  /// the compensation pass; call c consumes stage c - 1's outcome and produces stage c's
  /// round. The leader's top-k is a selection of k of n; the autoencoder is declared by its
  /// layers (LgcAutoencoder::encode_flops, decode_flops), and rank 0's training, on the step
  /// whose weights round it produces, as LgcAutoencoder::training_flops of the rows and
  /// iterations it ran plus the passes that normalise and pad the rows.
  CodecWork round_work(int call, std::int64_t numel) const override;
  /// lgc_ps kReduce: every payload read; codes decoded by the autoencoder; the values added.
  CodecWork reduce_work(int round, std::int64_t numel, std::size_t payloads,
                        std::uint64_t payload_bytes) const override;
  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  Round begin_exchange(const at::Tensor& grad) override;
  std::optional<Round> continue_exchange(int round, RoundOutcome&& outcome) override;
  at::Tensor exchange_result() override;
  at::Tensor reduce_round(int round, const std::vector<ByteSpan>& payloads) override;
  void observe_broadcast(int round, ByteSpan payload) override;

  // --- Introspection (tests, tools) -----------------------------------------------------------
  std::int64_t step() const { return step_; }
  /// The error-feedback residual (undefined before the first step or without error feedback).
  const at::Tensor& residual() const { return residual_; }
  /// The autoencoder every worker uses in phase 2 (nullptr before its weights arrived).
  const LgcAutoencoder* autoencoder() const { return ae_.get(); }
  /// k for a gradient of n elements.
  std::int64_t k_for(std::int64_t n) const;
  /// The training loss curve of the last autoencoder training (rank 0 only).
  const std::vector<double>& training_losses() const { return training_losses_; }
  /// Trainings rank 0 ran: the first at the start of phase 2, then one per fine-tune.
  int trainings() const { return trainings_; }
  /// Whether step `step` begins with a broadcast of the autoencoder's weights: the first
  /// phase-2 step and every `ae_finetune_every` steps after it (the same on every worker).
  bool weights_step(std::int64_t step) const;

  // --- Declared payload sizes (exact; the tests hold every round to them) --------------------
  /// kIndices / kIndicesValues: header, kind, u32 leader, u32 k, u8 coding, u32 section bytes,
  /// the compact index section (SparseWire.h), and 4k bytes of values if `with_values`.
  static std::size_t indices_payload_size(const std::vector<std::uint32_t>& indices,
                                          bool with_values);
  static std::size_t values_payload_size(std::int64_t k) { return 12 + 1 + 4 + 4 * k; }
  static std::size_t code_payload_size(std::int64_t code_length) {
    return 12 + 1 + 4 + 4 + 4 + 4 * code_length;
  }
  static std::size_t leader_payload_size() { return 12 + 1 + 4; }
  static std::size_t weights_payload_size(std::int64_t parameter_count) {
    return 12 + 1 + 4 + 4 + 4 + 4 * parameter_count;
  }

 private:
  enum class Stage { kDense, kWeights, kIndices, kValues, kCodes };

  void ensure_length(std::int64_t n, const char* who);
  std::unique_ptr<LgcAutoencoder> make_autoencoder() const;
  Bytes weights_payload() const;
  void load_weights(ByteSpan payload, const char* what);
  Bytes indices_payload(int leader, const std::vector<std::uint32_t>& indices,
                        const float* values) const;
  /// Parses a kIndices / kIndicesValues payload into the shared-index state.
  void take_indices(ByteSpan payload, bool expect_values, const char* what);
  Round next_round();
  /// Rank 0: a fresh model trained on the phase-1 vectors (ae_train_iters), or the current
  /// one fine-tuned on the vectors since the last training (ae_finetune_iters).
  void train_autoencoder();
  /// Rank 0: keeps this step's value vectors as training data (and the leader's for lgc_ps).
  void collect_sample(const at::Tensor& mean);
  at::Tensor scatter(const at::Tensor& values_k) const;
  void finish_step(const at::Tensor& update, const at::Tensor& own_reconstruction);

  Options options_;
  int rank_;
  int workers_;
  std::int64_t numel_;
  std::int64_t k_ = 0;

  std::int64_t step_ = 0;
  at::Tensor residual_;

  // The step in progress.
  std::vector<Stage> stages_;
  std::size_t stage_ = 0;
  at::Tensor acc_;                       ///< this worker's compensated gradient
  int leader_ = 0;
  std::vector<std::uint32_t> indices_;   ///< shared indices of this step
  at::Tensor index_tensor_;              ///< the same as int64
  at::Tensor leader_values_;             ///< lgc_ps side information [k]
  at::Tensor own_values_;                ///< acc at the shared indices [k]
  at::Tensor result_;

  std::unique_ptr<LgcAutoencoder> ae_;
  std::vector<at::Tensor> samples_;      ///< rank 0, phase 1: value vectors [k]
  std::vector<at::Tensor> side_;         ///< lgc_ps: the leader's values paired with them
  std::vector<double> training_losses_;
  int trainings_ = 0;
  /// The training this step's weights round carries (rank 0), for its declared work.
  double training_flops_ = 0;
  std::int64_t training_rows_ = 0;
};

}  // namespace gradwire
