// Test-set metrics: top-1 and top-5 accuracy and mean cross-entropy of a classifier, and per
// token perplexity of a language model, against values worked out by hand.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "nodes/training/Model.h"
#include "sim/engine/Evaluation.h"

namespace gradwire {
namespace {

/// Returns its input as logits, so a test chooses every prediction.
class LogitsAsInput : public Model {
 public:
  torch::Tensor forward(torch::Tensor x) override { return x; }
};

TEST(Evaluator, TopOneTopFiveAndLossOfAClassifier) {
  // 4 samples, 12 classes; logits rank class c at position c (class 11 highest).
  Dataset test;
  test.classes = 12;
  test.sample_shape = {12};
  test.inputs = torch::arange(12, torch::kFloat).repeat({4, 1});
  test.labels = torch::tensor({11, 8, 7, 0}, torch::kLong);  // top-1, top-5, top-5, neither
  LogitsAsInput model;
  const EvalResult r = Evaluator(test, 0, torch::kCPU).evaluate(model);
  EXPECT_EQ(r.samples, 4);
  EXPECT_DOUBLE_EQ(r.accuracy, 0.25);
  EXPECT_DOUBLE_EQ(r.top5_accuracy, 0.75);
  EXPECT_LT(r.perplexity, 0);  // not a language model
  double expected = 0;
  double log_z = 0;
  for (int c = 0; c < 12; ++c) log_z += std::exp(static_cast<double>(c));
  log_z = std::log(log_z);
  for (int label : {11, 8, 7, 0}) expected += (log_z - label) / 4.0;
  EXPECT_NEAR(r.loss, expected, 1e-5);

  // eval_samples: only the first samples count.
  const EvalResult first = Evaluator(test, 1, torch::kCPU).evaluate(model);
  EXPECT_EQ(first.samples, 1);
  EXPECT_DOUBLE_EQ(first.accuracy, 1.0);
}

TEST(Evaluator, FewClassesHaveNoTopFive) {
  Dataset test;
  test.classes = 3;
  test.sample_shape = {3};
  test.inputs = torch::tensor({{0.f, 1.f, 2.f}});
  test.labels = torch::tensor({2}, torch::kLong);
  LogitsAsInput model;
  EXPECT_LT(Evaluator(test, 0, torch::kCPU).evaluate(model).top5_accuracy, 0);
}

TEST(Evaluator, PerplexityOfALanguageModelIsPerToken) {
  // 2 sequences of 3 tokens over a vocabulary of 4; uniform logits except where a token is
  // made certain, so each position's loss is known.
  Dataset test;
  test.tokens = true;
  test.classes = 4;
  test.sample_shape = {3};
  test.inputs = torch::zeros({2, 3, 4});
  test.inputs.index_put_({0, 0, 1}, 50.0f);  // position (0, 0): certain of token 1
  test.labels = torch::tensor({{1, 2, 3}, {0, 0, 0}}, torch::kLong);
  LogitsAsInput model;
  const EvalResult r = Evaluator(test, 0, torch::kCPU).evaluate(model);
  // One token with loss ~0, five with log 4.
  const double mean = 5.0 * std::log(4.0) / 6.0;
  EXPECT_NEAR(r.loss, mean, 1e-5);
  EXPECT_NEAR(r.perplexity, std::exp(mean), 1e-4);
  // Next-token accuracy: (0, 0) is right; a tie picks token 0, right for the three 0 labels.
  EXPECT_NEAR(r.accuracy, 4.0 / 6.0, 1e-12);
  EXPECT_EQ(r.samples, 2);
}

}  // namespace
}  // namespace gradwire
