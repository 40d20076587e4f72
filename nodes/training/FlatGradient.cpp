#include "nodes/training/FlatGradient.h"

#include <ATen/ATen.h>

namespace gradwire {

namespace {

bool one_flat_vector_fits(const std::vector<at::Tensor>& parameters) {
  if (parameters.empty()) return false;
  for (const auto& p : parameters) {
    if (p.scalar_type() != parameters.front().scalar_type() ||
        p.device() != parameters.front().device() || !p.is_contiguous()) {
      return false;
    }
  }
  return true;
}

}  // namespace

void FlatGradient::bind(const std::vector<at::Tensor>& parameters) {
  shared_ = one_flat_vector_fits(parameters);
  if (!shared_) {
    flat_ = at::Tensor();
    for (auto p : parameters) p.mutable_grad() = at::zeros_like(p);
    return;
  }
  std::int64_t numel = 0;
  for (auto p : parameters) {
    p.mutable_grad() = at::Tensor();  // drop views of the last vector (or of an update)
    numel += p.numel();
  }
  // Reuse the vector only when nothing outside holds it: a scheme may still read last
  // step's gradient (asynchronous sends, error feedback).
  const bool reusable = flat_.defined() && flat_.numel() == numel &&
                        flat_.scalar_type() == parameters.front().scalar_type() &&
                        flat_.device() == parameters.front().device() &&
                        flat_.use_count() == 1 && flat_.storage().use_count() == 1;
  if (reusable) {
    flat_.zero_();
  } else {
    flat_ = at::zeros({numel}, parameters.front().options().requires_grad(false));
  }
  std::int64_t offset = 0;
  for (auto p : parameters) {
    const std::int64_t n = p.numel();
    p.mutable_grad() = flat_.slice(0, offset, offset + n).view(p.sizes());
    offset += n;
  }
}

at::Tensor FlatGradient::take(const std::vector<at::Tensor>& parameters, bool on_device) const {
  if (shared_) return on_device ? flat_ : flat_.to(at::kCPU).contiguous();
  std::vector<at::Tensor> grads;
  grads.reserve(parameters.size());
  for (const auto& p : parameters) grads.push_back(p.grad().reshape({-1}));
  const at::Tensor flat = at::cat(grads);
  return on_device ? flat.contiguous() : flat.to(at::kCPU).contiguous();
}

void FlatGradient::release(const std::vector<at::Tensor>& parameters) {
  for (auto p : parameters) p.mutable_grad() = at::Tensor();
}

void FlatGradient::point_at(const std::vector<at::Tensor>& parameters, const at::Tensor& update) {
  std::int64_t offset = 0;
  for (auto p : parameters) {
    const std::int64_t n = p.numel();
    p.mutable_grad() =
        update.slice(0, offset, offset + n).view(p.sizes()).to(p.scalar_type());
    offset += n;
  }
}

}  // namespace gradwire
