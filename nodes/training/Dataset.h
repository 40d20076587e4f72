// In-memory classification datasets: Fashion-MNIST from Debian's gz IDX files, CIFAR-10/100
// from their binary files, and a seeded synthetic Gaussian mixture for tests.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/types.h>

namespace gradwire {

/// Missing or unreadable dataset files; the message says which file and how to get it.
class DatasetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Dataset {
  torch::Tensor inputs;   ///< float32 [N, ...sample_shape], normalised
  torch::Tensor labels;   ///< int64 [N], values in [0, classes)
  std::int64_t classes = 0;
  std::vector<std::int64_t> sample_shape;  ///< e.g. {1, 28, 28} or {features}
  std::int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

struct DatasetSplit {
  Dataset train;
  Dataset test;
};

/// Debian's dataset-fashion-mnist location.
inline const char* kDefaultFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Reads train/t10k images and labels (gz IDX) from `dir`. Pixels scaled to [0,1] then
/// normalised with the training mean/std. `train_limit` / `test_limit` > 0 keep only the first
/// samples. Throws DatasetError naming the missing/corrupt file.
DatasetSplit load_fashion_mnist(const std::string& dir, std::int64_t train_limit = 0,
                                std::int64_t test_limit = 0);

/// CIFAR-10 (`classes` 10) or CIFAR-100 (100, fine labels) from the binary files in `dir`
/// (Cifar.cpp names them). Pixels scaled to [0,1], then normalised per channel with the
/// training set's mean/std. `train_limit` / `test_limit` > 0 keep only the first samples.
/// Throws DatasetError naming the missing or malformed file and the files expected.
DatasetSplit load_cifar(const std::string& dir, std::int64_t classes, std::int64_t train_limit = 0,
                        std::int64_t test_limit = 0);

struct SyntheticConfig {
  std::int64_t classes = 10;
  std::int64_t features = 32;
  std::int64_t train_samples = 8000;
  std::int64_t test_samples = 2000;
  double separation = 3.0;  ///< std-dev of the class means; noise std-dev is 1
};

/// Seeded Gaussian mixture: class means ~ N(0, separation^2 I), samples = mean + N(0, I).
/// The same seed gives bit-identical tensors.
DatasetSplit make_synthetic(const SyntheticConfig& config, std::uint64_t seed);

}  // namespace gradwire
