// A word-level LSTM language model as in the PTB experiments of Zaremba et al. 2014 and of
// Deep Gradient Compression (Lin et al. 2018): embedding, a stack of LSTM layers with dropout
// between them, and a linear decoder to the vocabulary (optionally sharing the embedding's
// weights). Each training sequence starts from a zero state: sequences are shuffled across
// workers, so no hidden state is carried from one batch to the next.
#pragma once

#include <cstdint>
#include <memory>

#include "nodes/training/Model.h"

namespace gradwire {

/// The `lstm_lm` model's keys: embedding and hidden sizes (PTB "medium": 650; DGC's PTB model:
/// 1500), layers, dropout between layers, and whether the decoder shares the embedding's
/// weights.
struct LstmLanguageModelSettings {
  std::int64_t embedding = 650;
  std::int64_t hidden_size = 650;
  std::int64_t layers = 2;
  double dropout = -1;  ///< < 0: the model's default, 0.5
  bool tied = false;
};

class LstmLanguageModel : public Model {
 public:
  /// `input`: token sequences ({T}) over `input.classes` tokens. Sizes from `config`:
  /// embedding, hidden_size, layers, dropout (< 0: 0.5), tied (needs embedding ==
  /// hidden_size). Throws std::invalid_argument for sizes below 1 or an untieable pair.
  LstmLanguageModel(const ModelInput& input, const LstmLanguageModelSettings& config);

  /// `x`: int64 [batch, T] token ids; returns [batch, T, vocabulary] next-token logits.
  torch::Tensor forward(torch::Tensor x) override;

 private:
  struct Layers;
  std::shared_ptr<Layers> layers_;
};

}  // namespace gradwire
