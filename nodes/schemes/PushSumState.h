// One node's push-sum state in Stochastic Gradient Push: numerator x and weight w, with the
// three operations of a step. Kept apart from the messaging so the algorithm can be checked on
// its own (tests/nodes/schemes/schemes_test.cpp runs it on a quadratic objective).
#pragma once

#include <ATen/ATen.h>

namespace gradwire {

class PushSumState {
 public:
  PushSumState() = default;
  explicit PushSumState(const at::Tensor& initial)
      : x_(initial.clone()), w_(1.0), momentum_(at::zeros_like(initial)) {}

  /// De-biased parameters z = x / w: where gradients are taken and what is evaluated.
  at::Tensor z() const { return x_ / w_; }
  const at::Tensor& x() const { return x_; }
  double w() const { return w_; }

  /// Local SGD step on x with a gradient taken at z (momentum local to the node).
  void local_step(const at::Tensor& gradient, double lr, double momentum, double weight_decay,
                  bool nesterov) {
    at::Tensor g = weight_decay > 0 ? gradient + weight_decay * z() : gradient;
    at::Tensor direction = g;
    if (momentum > 0) {
      momentum_.mul_(momentum).add_(g);
      direction = nesterov ? g + momentum * momentum_ : momentum_;
    }
    x_.sub_(direction, lr);
  }

  /// Keeps the share p of (x, w) and returns the share each out-peer receives (the same p).
  void keep_share(double p) {
    x_.mul_(p);
    w_ *= p;
  }

  /// Adds a share received from an in-peer.
  void absorb(const at::Tensor& x, double w) {
    x_.add_(x);
    w_ += w;
  }

 private:
  at::Tensor x_;
  double w_ = 1.0;
  at::Tensor momentum_;
};

}  // namespace gradwire
