#include "codecs/GradientChecks.h"

#include <stdexcept>

#include <torch/types.h>

namespace gradwire {

void check_gradient(const torch::Tensor& grad, const std::string& who, bool on_device) {
  if (!grad.defined()) throw std::invalid_argument(who + ": gradient tensor is undefined");
  if (grad.dim() != 1) {
    throw std::invalid_argument(who + ": expected a 1-D (flat) gradient, got " +
                                std::to_string(grad.dim()) + " dimensions");
  }
  if (grad.scalar_type() != torch::kFloat) {
    throw std::invalid_argument(who + ": expected a float32 gradient, got " +
                                std::string(c10::toString(grad.scalar_type())));
  }
  if (!grad.device().is_cpu() && !on_device) {
    throw std::invalid_argument(who + ": expected a CPU tensor; move it with .cpu() first");
  }
  if (!grad.is_contiguous()) {
    throw std::invalid_argument(who + ": expected a contiguous tensor");
  }
}

torch::Tensor codec_input(const Codec& codec, const torch::Tensor& grad) {
  if (grad.device().is_cpu() || codec.traits().encodes_on_device) return grad;
  return grad.to(torch::kCPU);
}

void check_chunk_bounds(std::int64_t numel, const std::vector<std::int64_t>& bounds) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument("encode_chunks: bad bounds for a gradient of " +
                                 std::to_string(numel) + " elements: " + why);
  };
  if (bounds.size() < 2) throw bad("need at least two bounds (0 and numel)");
  if (bounds.front() != 0) throw bad("first bound is " + std::to_string(bounds.front()) + ", not 0");
  if (bounds.back() != numel) {
    throw bad("last bound is " + std::to_string(bounds.back()) + ", not numel");
  }
  for (std::size_t i = 1; i < bounds.size(); ++i) {
    if (bounds[i] < bounds[i - 1]) {
      throw bad("bounds decrease at position " + std::to_string(i) + " (" +
                std::to_string(bounds[i - 1]) + " -> " + std::to_string(bounds[i]) + ")");
    }
  }
}

void ensure_state(torch::Tensor& state, const torch::Tensor& grad, const std::string& who) {
  if (!state.defined()) {
    state = torch::zeros_like(grad);
    return;
  }
  ensure_state(state, grad.numel(), who);
  if (state.device() != grad.device()) state = state.to(grad.device());
}

void ensure_state(torch::Tensor& state, std::int64_t n, const std::string& who) {
  if (!state.defined()) {
    state = torch::zeros({n}, torch::kFloat);
  } else if (state.numel() != n) {
    throw std::invalid_argument(who + ": gradient has " + std::to_string(n) +
                                " elements but the codec's state has " +
                                std::to_string(state.numel()) + "; one object per flat gradient");
  }
}

}  // namespace gradwire
