// Where a training step draws its random numbers (dropout masks). A worker makes its own
// generator current around its forward/backward (a thread-local scope), so its masks depend on
// its seed and how many steps it took: not on which workers drew before it in the event loop,
// nor on the thread that runs the step. That is what lets workers compute at once on a thread
// pool with the same numbers as one after another (nodes/schemes/ComputeBatch.h), and a worker
// process draw what the same rank draws in-process. Without a scope, draws come from
// LibTorch's global generator, as torch::dropout's do.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/types.h>

namespace gradwire {

class StepRandomness {
 public:
  /// Makes `generator` (a CPU generator) current on this thread until destroyed.
  class Scope {
   public:
    explicit Scope(at::Generator& generator);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    at::Generator* previous_;
  };

  /// The generator current on this thread; null outside a scope.
  static at::Generator* current();

  /// Inverted dropout, as torch::dropout: in training, each element is zeroed with
  /// probability `p` and the rest scaled by 1 / (1 - p). The mask comes from the current
  /// generator (drawn on the CPU, then moved to x's device), or from the global one outside a
  /// scope, where this is torch::dropout itself.
  static torch::Tensor dropout(const torch::Tensor& x, double p, bool training);
};

}  // namespace gradwire
