#include "nodes/schemes/SynchronousScheme.h"

#include <ATen/ATen.h>

#include "nodes/schemes/Collective.h"
#include "nodes/schemes/Faults.h"
#include "nodes/schemes/Worker.h"

namespace gradwire {

namespace {
/// Applies the aggregate to the replica and ends the worker's step. A round that applied no
/// update (partial participation, nobody arrived) leaves the replica as it is.
Collective::Done apply_and_finish(Worker& worker) {
  Worker* w = &worker;
  return [w](const at::Tensor& aggregate) {
    if (aggregate.defined()) w->ApplyGradient(aggregate);
    w->FinishStep();
  };
}
}  // namespace

void SynchronousScheme::on_gradient(Worker& worker, const at::Tensor& gradient) {
  collective_->contribute(worker.rank(), worker.steps_done(), gradient, apply_and_finish(worker));
}

int SynchronousScheme::gradient_buckets() const { return collective_->buckets(); }

// The ring and parameter-server collectives pass gradients to codecs through codec_input.
bool SynchronousScheme::takes_device_gradients() const { return true; }

void SynchronousScheme::on_bucket(Worker& worker, int bucket, const at::Tensor& slice) {
  collective_->contribute_bucket(worker.rank(), worker.steps_done(), bucket, slice,
                                 apply_and_finish(worker));
}

bool SynchronousScheme::computes(Worker& worker) {
  return collective_->takes_part(worker.rank(), worker.steps_done());
}

void SynchronousScheme::on_sit_out(Worker& worker) {
  collective_->sit_out(worker.rank(), worker.steps_done(), apply_and_finish(worker));
}

void SynchronousScheme::on_start(Worker& worker) {
  const auto rank = static_cast<std::size_t>(worker.rank());
  if (workers_.size() <= rank) workers_.resize(rank + 1, nullptr);
  workers_[rank] = &worker;
}

FaultTolerant* SynchronousScheme::faults() {
  auto* f = dynamic_cast<FaultTolerant*>(collective_);
  if (f) {
    f->set_parameter_source([this](int rank) {
      return workers_.at(static_cast<std::size_t>(rank))->Parameters();
    });
  }
  return f;
}

}  // namespace gradwire
