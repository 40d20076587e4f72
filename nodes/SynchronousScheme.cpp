#include "nodes/SynchronousScheme.h"

#include <ATen/ATen.h>

#include "nodes/Collective.h"
#include "nodes/Worker.h"

namespace gradwire {

void SynchronousScheme::on_gradient(Worker& worker, const at::Tensor& gradient) {
  Worker* w = &worker;
  collective_->contribute(worker.rank(), worker.steps_done(), gradient,
                          [w](const at::Tensor& aggregate) {
                            w->ApplyGradient(aggregate);
                            w->FinishStep();
                          });
}

}  // namespace gradwire
