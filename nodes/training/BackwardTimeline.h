// When, within a training step's compute time, each parameter's gradient is complete: the
// instant gradient buckets are released to communication while backward goes on.
//
// A step is the forward pass (1/3 of the step's compute) then the backward pass (2/3), the
// usual rule that backward costs about twice the forward (Kaplan et al. 2020, sec. 2.1).
// Backward visits the layers in reverse order; a layer's gradients are complete when its own
// backward is done. Each layer's backward time is proportional to its forward FLOPs
// (Model::layer_costs) when every parameter belongs to a costed layer; otherwise (a
// TorchScript model, which states no per-layer costs) to its parameters' element count, a
// rough stand-in documented in docs/models.md. Measured runs use the real instants instead
// (autograd hooks, nodes/schemes/Worker.cpp).
#pragma once

#include <string>
#include <vector>

namespace gradwire {

class Model;

/// Share of the backward pass in a step's compute time.
constexpr double kBackwardShare = 2.0 / 3.0;

/// Per parameter, in forward order: the fraction of the step's compute time at which its
/// gradient is complete (in (1/3, 1]; the first layer's parameters finish at 1).
std::vector<double> gradient_ready_fractions(const Model& model);

/// Which rule gradient_ready_fractions used: "layer FLOPs" or "parameter count".
std::string gradient_ready_rule(const Model& model);

}  // namespace gradwire
