// Models: output shapes, registered parameters, forward FLOP counts against hand-computed
// numbers, make_model's errors, and that the MLP actually learns the synthetic task.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <stdexcept>
#include <vector>

#include "OneTorchThread.h"
#include "nodes/training/Dataset.h"
#include "nodes/training/LeNet.h"
#include "nodes/training/Mlp.h"
#include "nodes/training/Model.h"
#include "nodes/training/ShardLoader.h"

using namespace gradwire;

namespace {

std::int64_t parameter_count(torch::nn::Module& module) {
  std::int64_t n = 0;
  for (const auto& p : module.parameters()) n += p.numel();
  return n;
}

TEST(Model, MlpShapesAndParameters) {
  ModelConfig config;
  config.kind = "mlp";
  config.edit_settings<MlpSettings>().hidden = {64, 32};
  const auto model = make_model(config, {20}, 5);
  EXPECT_NE(std::dynamic_pointer_cast<Mlp>(model), nullptr);
  EXPECT_EQ(model->forward(torch::randn({7, 20})).sizes(), (std::vector<std::int64_t>{7, 5}));
  EXPECT_EQ(parameter_count(*model), 20 * 64 + 64 + 64 * 32 + 32 + 32 * 5 + 5);
  EXPECT_EQ(model->forward_flops_per_sample(), 2 * (20 * 64 + 64 * 32 + 32 * 5));

  // Image samples are flattened.
  const auto on_images = make_model(config, {1, 28, 28}, 10);
  EXPECT_EQ(on_images->forward(torch::randn({3, 1, 28, 28})).sizes(),
            (std::vector<std::int64_t>{3, 10}));

  // No hidden layers: softmax regression.
  config.edit_settings<MlpSettings>().hidden = {};
  const auto linear = make_model(config, {6}, 3);
  EXPECT_EQ(parameter_count(*linear), 6 * 3 + 3);
  EXPECT_EQ(linear->forward_flops_per_sample(), 2 * 6 * 3);
}

TEST(Model, LeNetShapesParametersAndFlops) {
  const auto model = make_model(ModelConfig{}, {1, 28, 28}, 10);
  EXPECT_NE(std::dynamic_pointer_cast<LeNet>(model), nullptr);
  EXPECT_EQ(model->forward(torch::randn({4, 1, 28, 28})).sizes(),
            (std::vector<std::int64_t>{4, 10}));
  // conv1 6x1x5x5+6, conv2 16x6x5x5+16, fc 400x120+120, 120x84+84, 84x10+10.
  EXPECT_EQ(parameter_count(*model), 156 + 2416 + 48120 + 10164 + 850);
  EXPECT_EQ(model->named_parameters().size(), 10U);

  // MACs: conv1 28*28 outputs x 6 channels x (1x5x5) = 117,600; conv2 10*10 x 16 x (6x5x5)
  // = 240,000; fc 400*120 + 120*84 + 84*10 = 58,920. Total 416,520 MACs = 833,040 FLOPs.
  EXPECT_EQ(model->forward_flops_per_sample(), 833040);
}

TEST(Model, LeNetFollowsTheInputShape) {
  // 3x32x32 (CIFAR-like): 32 -> 32 -> 16 -> 12 -> 6, so fc1 sees 16*6*6 = 576 features.
  const auto model = make_model(ModelConfig{}, {3, 32, 32}, 10);
  EXPECT_EQ(model->forward(torch::randn({2, 3, 32, 32})).sizes(),
            (std::vector<std::int64_t>{2, 10}));
  const std::int64_t macs = 32 * 32 * 6 * 3 * 25 + 12 * 12 * 16 * 6 * 25 + 576 * 120 +
                            120 * 84 + 84 * 10;
  EXPECT_EQ(model->forward_flops_per_sample(), 2 * macs);

  // Non-square, odd sizes floor through the pools: 1x13x20 -> 6x9 -> 2x5 -> 1x2.
  const auto odd = make_model(ModelConfig{}, {1, 13, 20}, 4);
  EXPECT_EQ(odd->forward(torch::randn({2, 1, 13, 20})).sizes(), (std::vector<std::int64_t>{2, 4}));
}

TEST(Model, MakeModelErrors) {
  ModelConfig unknown;
  unknown.kind = "resnet";
  EXPECT_THROW(make_model(unknown, {1, 28, 28}, 10), std::invalid_argument);
  EXPECT_THROW(make_model(ModelConfig{}, {32}, 10), std::invalid_argument);  // cnn on features
  EXPECT_THROW(make_model(ModelConfig{}, {1, 8, 8}, 10), std::invalid_argument);  // too small
  ModelConfig zero_width;
  zero_width.kind = "mlp";
  zero_width.edit_settings<MlpSettings>().hidden = {16, 0};
  EXPECT_THROW(make_model(zero_width, {4}, 2), std::invalid_argument);
  try {
    make_model(ModelConfig{}, {32}, 10);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cnn"), std::string::npos) << e.what();
  }
}

std::vector<std::int64_t> all_indices(std::int64_t n) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  std::iota(out.begin(), out.end(), std::int64_t{0});
  return out;
}

double accuracy(Model& model, const Dataset& data) {
  torch::NoGradGuard no_grad;
  const torch::Tensor predicted = model.forward(data.inputs).argmax(1);
  return predicted.eq(data.labels).to(torch::kDouble).mean().item<double>();
}

TEST(Model, MlpLearnsTheSyntheticTask) {
  SyntheticConfig data_config;
  data_config.train_samples = 2000;
  data_config.test_samples = 500;
  const DatasetSplit data = make_synthetic(data_config, 5);

  torch::manual_seed(5);
  ModelConfig config;
  config.kind = "mlp";
  config.edit_settings<MlpSettings>().hidden = {64};
  const auto model = make_model(config, data.train.sample_shape, data.train.classes);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  ShardLoader loader(data.train, all_indices(data.train.size()), 32, 5);

  const auto full_loss = [&] {
    torch::NoGradGuard no_grad;
    return torch::cross_entropy_loss(model->forward(data.train.inputs), data.train.labels)
        .item<double>();
  };
  const double initial = full_loss();
  for (int step = 0; step < 300; ++step) {
    const auto [inputs, labels] = loader.next();
    optimizer.zero_grad();
    const torch::Tensor loss = torch::cross_entropy_loss(model->forward(inputs), labels);
    loss.backward();
    optimizer.step();
  }
  const double final_loss = full_loss();
  EXPECT_LT(final_loss, 0.1 * initial) << "initial " << initial << " final " << final_loss;
  EXPECT_GT(accuracy(*model, data.train), 0.95);
  EXPECT_GT(accuracy(*model, data.test), 0.9);
}

}  // namespace
