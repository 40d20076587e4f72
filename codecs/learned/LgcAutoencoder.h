// The small 1-D convolutional autoencoder of Learned Gradient Compression (L. Abrahamyan,
// Y. Chen, G. Bekoulis, N. Deligiannis, "Learned Gradient Compression for Distributed Deep
// Learning", IEEE TNNLS 2021, doi:10.1109/TNNLS.2021.3084806), trained online with LibTorch on
// the top-k value vectors the workers exchanged during LGC's phase 1 (see LgcCodec.h).
//
// Input: a vector of k values (one worker's gradient values at the leader's top-k indices, in
// index order), zero-padded to a multiple of 2^layers. Shapes, H = hidden channels, C = code
// channels, K = padded length:
//
//   encoder  [1, K] -> Conv1d(4, stride 2) x layers -> [C, K / 2^layers]
//            no bias, no activation: the encoder is LINEAR, so the sum of the workers' codes
//            is the code of the sum of their values. lgc_ring relies on this to all-reduce
//            codes and decode once (the paper's ring-allreduce variant).
//   decoder  [C, K / 2^layers] -> ConvTranspose1d(4, stride 2) + LeakyReLU x layers -> [H, K]
//            -> (lgc_ps: concatenated with the side information, the leader's values, as one
//               more channel) -> Conv1d(1) + LeakyReLU -> Conv1d(1) -> [1, K] -> first k
//            The decoder is non-linear but has no biases and LeakyReLU is positively
//            homogeneous, so decode(a * code) = a * decode(code) for a > 0 (lgc_ring) and the
//            autoencoder needs no per-vector scale: what it learns on normalised vectors holds
//            at every gradient magnitude. The paper's decoder likewise upsamples with
//            transposed convolutions; the side-information channel mirrors its parameter-server
//            decoder, which reconstructs each node's gradient from a code plus information the
//            leader sent in the clear.
//
// Training (train()): Adam on the mean squared reconstruction error over the collected vectors,
// each normalised to unit RMS (side information by its own RMS), in mini-batches of at most
// kBatch rows taken in turn from one seeded shuffle (full batch when fewer), deterministic:
// weights are initialised from a private generator seeded by the caller, never from LibTorch's
// global generator (which the model and data pipeline use). The number of LibTorch threads is
// whatever the run set (torch::set_num_threads); tensors are CPU float32.
//
// Ownership: inputs are read, never modified; outputs are freshly allocated. One object per
// codec instance; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <ATen/core/Tensor.h>

namespace gradwire {

struct LgcAutoencoderConfig {
  bool side_information = false;  ///< lgc_ps: the decoder takes the leader's values as a channel
  int layers = 3;                 ///< stride-2 stages: the code is 2^layers shorter per channel
  int hidden_channels = 8;
  int code_channels = 2;
  std::int64_t input_length = 1;  ///< k: values per vector (>= 1)
};

class LgcAutoencoder {
 public:
  /// Rows per training iteration: enough to average out single-step noise, few enough that
  /// an iteration stays in the milliseconds on one CPU core.
  static constexpr std::int64_t kBatch = 32;

  /// Throws std::invalid_argument for out-of-range sizes (layers 1..8, channels 1..256).
  LgcAutoencoder(const LgcAutoencoderConfig& config, std::uint64_t seed);
  ~LgcAutoencoder();
  LgcAutoencoder(const LgcAutoencoder&) = delete;
  LgcAutoencoder& operator=(const LgcAutoencoder&) = delete;

  const LgcAutoencoderConfig& config() const { return config_; }
  /// k rounded up to a multiple of 2^layers.
  std::int64_t padded_length() const;
  /// Floats per code: code_channels * padded_length / 2^layers.
  std::int64_t code_length() const;
  /// Floats in all weights (what travels when the model is broadcast).
  std::int64_t parameter_count() const;
  /// Arithmetic of one vector through the encoder: 2 operations per multiply-add, every
  /// kernel weight at every output position of its layer (codec time, CodecWork.h).
  double encode_flops() const;
  /// The same through the decoder and head, activations included (side channel for lgc_ps).
  double decode_flops() const;
  /// One call of train(): per iteration each of min(rows, kBatch) rows goes forward through
  /// encoder and decoder and back (backward = twice forward: gradients of the inputs and of
  /// the weights), then Adam updates every weight (about 12 operations each).
  double training_flops(std::int64_t rows, int iterations) const;

  /// values: [k] or [N, k] float32 -> codes [code_length] or [N, code_length]. Linear.
  at::Tensor encode(const at::Tensor& values) const;
  /// codes: [code_length] or [N, code_length]; side (lgc_ps only, else undefined): [k] or
  /// [N, k], the side information already normalised by the caller. Returns [k] or [N, k].
  at::Tensor decode(const at::Tensor& codes, const at::Tensor& side = at::Tensor()) const;

  /// Trains on `samples` [N, k] (and `side` [N, k] for lgc_ps). Each row (and side row) is
  /// normalised to unit RMS first; all-zero rows stay zero. Returns the training loss (mean
  /// squared error per element on the normalised rows) after each iteration; `iterations` 0
  /// returns nothing and leaves the weights as they are.
  std::vector<double> train(const at::Tensor& samples, const at::Tensor& side, int iterations,
                            double learning_rate);

  /// sum ||decode(encode(x)) - x||^2 / sum ||x||^2 over the rows of `samples`, normalised as
  /// in train() (side likewise). 1 means no better than sending zeros.
  double relative_error(const at::Tensor& samples, const at::Tensor& side) const;

  /// All weights, flat, in a fixed parameter order (encoder, decoder, head).
  std::vector<float> weights() const;
  /// Replaces all weights; `count` must equal parameter_count() (std::invalid_argument).
  void set_weights(const float* data, std::size_t count);

 private:
  struct Net;
  LgcAutoencoderConfig config_;
  std::unique_ptr<Net> net_;
  std::uint64_t seed_;
};

}  // namespace gradwire
