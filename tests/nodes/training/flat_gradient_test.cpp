// The parameters' gradients as views of one flat vector: backward fills it exactly as separate
// gradients concatenated, nothing leaks from one step into the next, a vector a scheme still
// holds is never overwritten, and an update the optimizer reads in place stays untouched.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "OneTorchThread.h"
#include "nodes/training/FlatGradient.h"

namespace gradwire {
namespace {

struct TwoLayers {
  std::vector<at::Tensor> parameters;
  explicit TwoLayers(at::ScalarType bias_type = at::kFloat) {
    torch::manual_seed(5);
    parameters = {torch::randn({4, 3}).requires_grad_(), torch::randn({4}).requires_grad_(),
                  torch::randn({2, 4}).requires_grad_(),
                  torch::randn({2}, torch::TensorOptions().dtype(bias_type)).requires_grad_()};
  }
  void backward(const at::Tensor& input) const {
    const auto& p = parameters;
    at::Tensor hidden = torch::relu(torch::addmm(p[1], input, p[0].t()));
    at::Tensor out = torch::addmm(p[3].to(at::kFloat), hidden, p[2].t());
    out.pow(2).sum().backward();
  }
  // What the separate gradients of one fresh backward concatenate to.
  at::Tensor reference(const at::Tensor& input) const {
    for (auto p : parameters) p.mutable_grad() = at::Tensor();
    backward(input);
    std::vector<at::Tensor> grads;
    for (const auto& p : parameters) grads.push_back(p.grad().reshape({-1}).to(at::kFloat));
    at::Tensor flat = torch::cat(grads);
    for (auto p : parameters) p.mutable_grad() = at::Tensor();
    return flat;
  }
};

TEST(FlatGradient, BackwardFillsTheFlatVectorAsTheConcatenatedGradients) {
  TwoLayers model;
  const at::Tensor x1 = torch::randn({5, 3});
  const at::Tensor x2 = torch::randn({5, 3});
  FlatGradient flat;
  for (const at::Tensor& x : {x1, x2, x1}) {  // the third step finds the second's sums zeroed
    flat.bind(model.parameters);
    model.backward(x);
    const at::Tensor got = flat.take(model.parameters);
    EXPECT_TRUE(torch::equal(got, model.reference(x)));
  }
}

TEST(FlatGradient, AVectorStillHeldIsNeverOverwrittenAndAFreeOneIsReused) {
  TwoLayers model;
  FlatGradient flat;
  flat.bind(model.parameters);
  model.backward(torch::randn({5, 3}));
  const at::Tensor held = flat.take(model.parameters);
  const at::Tensor held_values = held.clone();

  flat.bind(model.parameters);  // a scheme still holds last step's gradient
  model.backward(torch::randn({5, 3}));
  at::Tensor second = flat.take(model.parameters);
  EXPECT_TRUE(torch::equal(held, held_values));
  EXPECT_NE(second.data_ptr(), held.data_ptr());

  const void* second_memory = second.data_ptr();
  second = at::Tensor();  // the scheme is done with it before the next step
  flat.bind(model.parameters);
  model.backward(torch::randn({5, 3}));
  EXPECT_EQ(flat.take(model.parameters).data_ptr(), second_memory);
}

TEST(FlatGradient, TheOptimizerReadsAnUpdateInPlaceWithoutChangingIt) {
  TwoLayers by_view;
  TwoLayers by_copy;
  torch::optim::SGD view_sgd(by_view.parameters, torch::optim::SGDOptions(0.1).momentum(0.9));
  torch::optim::SGD copy_sgd(by_copy.parameters, torch::optim::SGDOptions(0.1).momentum(0.9));
  const at::Tensor update = torch::randn({4 * 3 + 4 + 2 * 4 + 2});
  const at::Tensor update_values = update.clone();
  for (int step = 0; step < 2; ++step) {
    FlatGradient::point_at(by_view.parameters, update);
    view_sgd.step();
    FlatGradient::release(by_view.parameters);
    std::int64_t offset = 0;
    for (auto p : by_copy.parameters) {
      p.mutable_grad() = update.slice(0, offset, offset + p.numel()).view(p.sizes()).clone();
      offset += p.numel();
    }
    copy_sgd.step();
  }
  EXPECT_TRUE(torch::equal(update, update_values));
  for (std::size_t i = 0; i < by_view.parameters.size(); ++i) {
    EXPECT_TRUE(torch::equal(by_view.parameters[i], by_copy.parameters[i])) << "parameter " << i;
    EXPECT_FALSE(by_view.parameters[i].grad().defined()) << "released";
  }
}

TEST(FlatGradient, ParametersOfMixedTypesKeepGradientsOfTheirOwn) {
  TwoLayers model(at::kDouble);  // one float64 bias: no single float vector holds them all
  const at::Tensor x = torch::randn({5, 3});
  FlatGradient flat;
  for (int step = 0; step < 2; ++step) {
    flat.bind(model.parameters);
    model.backward(x);
    const at::Tensor got = flat.take(model.parameters).to(at::kFloat);
    EXPECT_TRUE(torch::allclose(got, model.reference(x)));
  }
}

}  // namespace
}  // namespace gradwire
