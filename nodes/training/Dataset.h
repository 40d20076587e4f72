// In-memory datasets: Fashion-MNIST from Debian's gz IDX files, CIFAR-10/100 from their binary
// files, token sequences from any UTF-8 text for language models, and seeded synthetic data
// (feature vectors, images of any shape, token sequences) for tests.
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
  /// float32 [N, ...sample_shape], normalised; for tokens int64 [N, T] token ids.
  torch::Tensor inputs;
  /// int64 [N] class ids in [0, classes); for tokens int64 [N, T], the next token of each input
  /// position.
  torch::Tensor labels;
  std::int64_t classes = 0;                ///< classes, or the vocabulary size for tokens
  std::vector<std::int64_t> sample_shape;  ///< e.g. {1, 28, 28}, {features} or {T}
  bool tokens = false;                     ///< a language-modelling dataset
  /// Images whose training batches get random crop (4-pixel zero padding) and horizontal flip.
  bool augment = false;
  std::vector<std::string> vocabulary;     ///< tokens: the text of each id
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

/// Text for language models: one UTF-8 file, or every regular file of a folder in name order.
struct TextConfig {
  std::string path = "/usr/share/common-licenses";  ///< English text every Debian system has
  std::string unit = "word";     ///< "word" (whitespace-separated, lower-cased) | "char"
  std::int64_t bptt = 35;        ///< tokens per training sequence (backpropagation through time)
  std::int64_t vocab = 10000;    ///< the most frequent units; the rest become <unk>
  double test_fraction = 0.1;    ///< the text's last tokens held out for evaluation
};

/// Reads `config.path`, builds the vocabulary from the training part (ties broken by first
/// appearance; "<unk>" and, for words, "<eos>" at each line end), and cuts both parts into
/// non-overlapping sequences of bptt inputs and their bptt next tokens. Throws DatasetError for
/// a missing or unreadable path, text that is not UTF-8, or too little text for one sequence
/// in each part.
DatasetSplit load_text(const TextConfig& config);

struct SyntheticConfig {
  std::int64_t classes = 10;
  std::int64_t features = 32;
  /// Non-empty: samples of this shape (e.g. {3, 32, 32}) instead of {features}.
  std::vector<std::int64_t> shape;
  /// > 0: token sequences over this vocabulary instead of labelled samples; classes and
  /// features are then unused.
  std::int64_t vocab = 0;
  std::int64_t seq_len = 35;  ///< tokens per sequence when vocab > 0
  std::int64_t train_samples = 8000;
  std::int64_t test_samples = 2000;
  double separation = 3.0;  ///< std-dev of the class means; noise std-dev is 1
};

/// Seeded synthetic data. Labelled samples: a Gaussian mixture, class means ~ N(0,
/// separation^2 I), samples = mean + N(0, I), of shape `shape` (or {features}). Tokens: text
/// drawn from a seeded sparse Markov chain over `vocab` tokens, so a language model can learn
/// it (its perplexity falls well below vocab). The same seed gives bit-identical tensors.
DatasetSplit make_synthetic(const SyntheticConfig& config, std::uint64_t seed);

}  // namespace gradwire
