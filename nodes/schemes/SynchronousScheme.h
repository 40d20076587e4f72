// Synchronous data parallelism: every step, the workers' gradients are combined by a
// Collective (ring all-reduce or parameter server) and each worker applies the aggregate to its
// replica when it arrives. Replicas stay identical.
#pragma once

#include <vector>

#include "nodes/schemes/TrainingScheme.h"

namespace gradwire {

class Collective;

class SynchronousScheme : public TrainingScheme {
 public:
  /// `collective` must outlive the scheme.
  explicit SynchronousScheme(Collective* collective) : collective_(collective) {}
  void on_gradient(Worker& worker, const at::Tensor& gradient) override;
  int gradient_buckets() const override;
  bool takes_device_gradients() const override;
  void on_bucket(Worker& worker, int bucket, const at::Tensor& slice) override;
  void on_start(Worker& worker) override;
  /// Partial participation is the collective's (who takes part in each round).
  bool computes(Worker& worker) override;
  void on_sit_out(Worker& worker) override;
  /// The collective's fault handling (ring and PS have it); it reads a donor's parameters
  /// from the workers registered in on_start.
  FaultTolerant* faults() override;

 private:
  Collective* collective_;
  std::vector<Worker*> workers_;
};

}  // namespace gradwire
