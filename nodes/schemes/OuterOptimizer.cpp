#include "nodes/schemes/OuterOptimizer.h"

namespace gradwire {

at::Tensor OuterOptimizer::step(const at::Tensor& start, const at::Tensor& pseudo_gradient) {
  at::Tensor update = pseudo_gradient;
  if (options_.momentum != 0.0) {
    // torch.optim.SGD starts its buffer with the first gradient itself.
    buffer_ = buffer_.defined() ? buffer_.mul(options_.momentum).add(pseudo_gradient)
                                : pseudo_gradient.clone();
    update = options_.nesterov ? pseudo_gradient.add(buffer_, options_.momentum) : buffer_;
  }
  // With lr 1 this is start - mean(start - x_i): the participants' mean model.
  return start.sub(update, options_.lr);
}

}  // namespace gradwire
