#include "nodes/schemes/TrainingScheme.h"

#include <limits>
#include <stdexcept>

#include <ATen/ATen.h>

namespace gradwire {

void TrainingScheme::on_bucket(Worker&, int, const at::Tensor&) {
  throw std::logic_error("this training scheme takes the gradient whole, not in buckets");
}

void TrainingScheme::on_sit_out(Worker&) {
  throw std::logic_error("this training scheme has every worker compute every step");
}

at::Tensor TrainingScheme::evaluation_parameters() const { return at::Tensor(); }

double TrainingScheme::consensus_distance() const { return 0.0; }

double TrainingScheme::mean_staleness() const { return std::numeric_limits<double>::quiet_NaN(); }

}  // namespace gradwire
