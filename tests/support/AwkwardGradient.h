// A gradient with what selection and rounding must get right: ties at one magnitude, signed
// zeros, a value beyond fp16's range, an fp16 subnormal, a halfway case of fp16 rounding, an
// infinity and (with_nan) NaNs of both signs. Shared by the codec tests that compare a
// codec's tensor-operation path with its host path.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace gradwire::testing {

inline torch::Tensor awkward_gradient(std::int64_t n, bool with_nan = true) {
  torch::manual_seed(11);
  torch::Tensor g = torch::randn({n});
  auto* v = g.data_ptr<float>();
  for (std::int64_t i = 0; i < n; i += 97) v[i] = 0.75f;  // many ties at one magnitude
  for (std::int64_t i = 5; i < n; i += 131) v[i] = -0.75f;
  const std::vector<float> specials = {-0.0f, 70000.0f, 3e-6f, -INFINITY, 1.0f + 1.0f / 2048,
                                       with_nan ? NAN : 0.5f, with_nan ? -NAN : 0.25f};
  for (std::size_t i = 0; i < specials.size() && static_cast<std::int64_t>(i + 1) < n; ++i) {
    v[i + 1] = specials[i];
  }
  return g;
}

}  // namespace gradwire::testing
