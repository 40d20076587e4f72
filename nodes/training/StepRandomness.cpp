#include "nodes/training/StepRandomness.h"

#include <ATen/ATen.h>

namespace gradwire {
namespace {

thread_local at::Generator* current_generator = nullptr;

}  // namespace

StepRandomness::Scope::Scope(at::Generator& generator) : previous_(current_generator) {
  current_generator = &generator;
}

StepRandomness::Scope::~Scope() { current_generator = previous_; }

at::Generator* StepRandomness::current() { return current_generator; }

torch::Tensor StepRandomness::dropout(const torch::Tensor& x, double p, bool training) {
  at::Generator* generator = current_generator;
  if (generator == nullptr) return at::dropout(x, p, training);
  if (!training || p == 0) return x;
  if (p >= 1) return x * 0;
  at::Tensor keep = at::empty(x.sizes(), x.options().device(at::kCPU).requires_grad(false))
                        .bernoulli_(1 - p, *generator)
                        .div_(1 - p);
  return x * keep.to(x.device());
}

}  // namespace gradwire
