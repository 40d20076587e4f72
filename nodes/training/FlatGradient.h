// The parameters' gradients as views of one flat float vector, as PyTorch DDP's
// gradient_as_bucket_view does: backward accumulates straight into the flat vector that the
// codecs and collectives read, so a step pays no concatenation copy (for a 45 MB MLP gradient
// that copy was 8 % of a dense ring step's wall time, tests/bench/scale_bench).
//
// The flat vector is handed out, not copied: a scheme may hold it for as long as it likes.
// A vector still referenced outside this class when the next step begins is never written
// again; that step gets a fresh one.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace gradwire {

class FlatGradient {
 public:
  /// Before forward/backward: points every parameter's gradient at its zeroed slice of the
  /// flat vector (parameters in order). Parameters of mixed dtypes or devices, or
  /// non-contiguous ones, cannot share one vector: each then gets a zeroed gradient of its
  /// own, and take() concatenates them.
  void bind(const std::vector<at::Tensor>& parameters);
  /// After backward: the flat gradient, on the CPU or (`on_device`) where the parameters
  /// live; it shares memory with the parameters' gradients until the next bind().
  at::Tensor take(const std::vector<at::Tensor>& parameters, bool on_device = false) const;
  /// Points the parameters' gradients at slices of `update` (flat, on their device) for the
  /// optimizer to read: no copy. `update` is only read; release() lets it go.
  static void point_at(const std::vector<at::Tensor>& parameters, const at::Tensor& update);
  /// Leaves the parameters without gradients (until the next bind()): an update is freed as
  /// soon as the optimizer has used it, as when it was copied.
  static void release(const std::vector<at::Tensor>& parameters);

 private:
  at::Tensor flat_;
  bool shared_ = false;  // one vector for all parameters (false: the fallback)
};

}  // namespace gradwire
