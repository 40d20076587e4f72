// The classifiers gradwire trains. Every model maps a batch of samples to class logits and
// states its forward cost, which compute profiles turn into simulated seconds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace gradwire {

class Model : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(torch::Tensor x) = 0;
  /// Multiply-accumulate count x 2 of one forward pass on one sample.
  virtual std::int64_t forward_flops_per_sample() const = 0;
};

struct ModelConfig {
  std::string kind = "cnn";                ///< "mlp" | "cnn" | "torchscript"
  std::string path;                        ///< torchscript: the exported module
  std::vector<std::int64_t> hidden = {256, 128};  ///< mlp hidden layer widths
  std::int64_t conv1 = 6;                  ///< cnn (LeNet-5-like) channels and widths
  std::int64_t conv2 = 16;
  std::int64_t fc1 = 120;
  std::int64_t fc2 = 84;
};

/// Builds `config.kind` for samples of `sample_shape` ({C,H,W} for images, {F} for features)
/// and `classes` outputs. The cnn requires an image shape; throws std::invalid_argument
/// otherwise. Parameters are initialised from the current torch RNG state; a torchscript
/// model keeps the weights stored in its file (ModelFileError when the file cannot be used).
std::shared_ptr<Model> make_model(const ModelConfig& config,
                                  const std::vector<std::int64_t>& sample_shape,
                                  std::int64_t classes);

}  // namespace gradwire
