// Synchronous data parallelism: every step, the workers' gradients are combined by a
// Collective (ring all-reduce or parameter server) and each worker applies the aggregate to its
// replica when it arrives. Replicas stay identical.
#pragma once

#include "nodes/TrainingScheme.h"

namespace gradwire {

class Collective;

class SynchronousScheme : public TrainingScheme {
 public:
  /// `collective` must outlive the scheme.
  explicit SynchronousScheme(Collective* collective) : collective_(collective) {}
  void on_gradient(Worker& worker, const at::Tensor& gradient) override;

 private:
  Collective* collective_;
};

}  // namespace gradwire
