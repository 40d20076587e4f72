// PowerSGD (Vogels, Karimireddy, Jaggi, "PowerSGD: Practical Low-Rank Gradient Compression for
// Distributed Optimization", NeurIPS 2019), as in the authors' epfml/powersgd and PyTorch's
// DDP powerSGD_hook.
//
// Every weight tensor of shape [n, ...] is viewed as a matrix M (n x m). One step of power
// iteration per training step, in two all-reduce rounds:
//   M = gradient + error                      (error feedback, per worker)
//   P = M Q                                   round 0: all-reduce(sum) P and the dense tensors
//   P = orthogonalise(P)                      (Gram-Schmidt; identical on every worker)
//   Q = M^T P                                 round 1: all-reduce(sum) Q
//   update = P Q^T / workers; error = M - update
// Q is kept between steps (warm start), so one iteration per step converges over time.
// 1-D tensors (biases) and matrices where rank-r factors save less than `min_compression`
// (PyTorch's min_compression_rate, default 2) travel dense in round 0 and keep no error.
// Before `start_step` every step is a plain dense all-reduce (PyTorch's start_powerSGD_iter).
//
// Orthogonalisation divides each column by its norm plus `orthogonalization_epsilon`, as
// PyTorch's _orthogonalize_gram_schmidt; PyTorch's PowerSGDState defaults it to 0 and offers a
// small value (e.g. 1e-8) against all-zero columns. A fixed epsilon shrinks the update of
// small gradients (a rank-1 update by (norm / (norm + epsilon))^2: 26% at a column norm of
// 6e-8 with 1e-8), so the default here is PyTorch's 0. A column whose norm is 0 (a layer whose
// summed P is zero) is then set to zeros, the recovery PyTorch's code writes for that case,
// instead of dividing by zero.
//
// The single-payload form (encode/decode: `gradwire codec`, the asynchronous parameter
// server) is the one-worker exchange: u32 rank, then per compressed matrix P (n x r, already
// orthogonal) and Q (m x r), then every dense tensor, all float32 in layout order
// (codecs/README.md).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codecs/CodecRegistry.h"
#include "codecs/MultiRoundCodec.h"

namespace gradwire {

class PowerSgdCodec : public MultiRoundCodec {
 public:
  static constexpr std::uint8_t kFormatVersion = 1;

  struct Options {
    int rank = 2;                 ///< approximation rank r (the paper's headline setting: 2)
    bool error_feedback = true;   ///< keep M - update as the next step's error
    bool warm_start = true;       ///< reuse Q between steps (the paper's key ingredient)
    std::int64_t start_step = 0;  ///< steps before this one are plain dense all-reduce
    double min_compression = 2.0; ///< compress a matrix only if it saves more than this factor
    double orthogonalization_epsilon = 0.0;  ///< added to each column norm (PyTorch's default 0)
  };

  /// `ctx.layers` gives the tensor shapes (without them the gradient is one 1-D tensor and
  /// travels dense); `ctx.seed` seeds the initial Q identically on every worker.
  PowerSgdCodec(Options options, const CodecContext& ctx);
  ~PowerSgdCodec() override;

  Bytes encode(const at::Tensor& grad) override;
  at::Tensor decode(ByteSpan payload) const override;
  /// The factors copied to `device` and multiplied there.
  at::Tensor decode_to(ByteSpan payload, const c10::Device& device) const override;
  /// Encode: the whole one-worker exchange, calls 0 to 2 of round_work, plus the payload.
  /// Decode: P Q^T per matrix (2 rows cols r operations) into 4n bytes.
  CodecWork work(CodecOp op, std::int64_t numel, std::uint64_t payload_bytes) const override;
  /// Per call of a compressed step, per matrix rows x cols of rank r:
  ///   0: M = gradient + error (read 8n, write 4n); P = M Q (2 rows cols r operations, M read)
  ///   1: P orthogonalised (Gram-Schmidt: rows (2 r (r - 1) + 3 r)); Q = M^T P (2 rows cols r)
  ///   2: P Q^T / workers into the update (2 rows cols r + rows cols); error = M - update
  /// A dense step (before start_step) does only the mean in call 1.
  CodecWork round_work(int call, std::int64_t numel) const override;

  Round begin_exchange(const at::Tensor& grad) override;
  std::optional<Round> continue_exchange(int round, RoundOutcome&& outcome) override;
  at::Tensor exchange_result() override;

  Bytes save_state() const override;
  void load_state(ByteSpan state) override;

  /// Floats one worker sends per compressed step (P and Q factors plus dense tensors).
  std::int64_t compressed_floats() const;
  /// The current error buffer (undefined before the first compressed step).
  const at::Tensor& error() const { return error_; }

 private:
  struct Matrix {
    std::int64_t offset = 0, rows = 0, cols = 0, rank = 0;
  };
  struct Span {
    std::int64_t offset = 0, numel = 0;
  };

  /// Round 0 of a compressed step: P = M Q for every matrix, and the dense tensors.
  at::Tensor first_round_values();
  /// After the P sum: orthogonalise, then Q = M^T P.
  at::Tensor second_round_values(const at::Tensor& p_and_dense_sum);
  /// After the Q sum: the update and the new error.
  void finish_compressed(const at::Tensor& q_sum, int workers);
  void ensure_q();
  at::Tensor decode_on(ByteSpan payload, const c10::Device& device) const;

  Options options_;
  int workers_;
  std::uint64_t seed_;
  std::int64_t numel_;
  std::vector<Matrix> matrices_;
  std::vector<Span> dense_;
  std::int64_t step_ = 0;
  bool dense_step_ = false;
  at::Tensor input_;               // M for the current step (gradient + error)
  at::Tensor error_;
  std::vector<at::Tensor> q_;      // warm-start factors, one per matrix
  std::vector<at::Tensor> p_;      // orthogonalised P of the current step
  at::Tensor dense_sum_;           // round-0 sum of the dense tensors
  at::Tensor result_;
};

}  // namespace gradwire
