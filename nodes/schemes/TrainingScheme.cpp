#include "nodes/schemes/TrainingScheme.h"

#include <limits>

#include <ATen/ATen.h>

namespace gradwire {

at::Tensor TrainingScheme::evaluation_parameters() const { return at::Tensor(); }

double TrainingScheme::consensus_distance() const { return 0.0; }

double TrainingScheme::mean_staleness() const { return std::numeric_limits<double>::quiet_NaN(); }

}  // namespace gradwire
