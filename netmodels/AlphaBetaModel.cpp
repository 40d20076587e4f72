#include "netmodels/AlphaBetaModel.h"

#include <stdexcept>

namespace gradwire {

AlphaBetaModel::AlphaBetaModel(double alpha_s, double beta_bps) : alpha_(alpha_s), beta_(beta_bps) {
  if (alpha_s < 0 || beta_bps <= 0) {
    throw std::invalid_argument("AlphaBetaModel: need alpha >= 0 and beta > 0");
  }
}

double AlphaBetaModel::transfer_time(double bytes) const { return alpha_ + 8.0 * bytes / beta_; }

double AlphaBetaModel::ring_allreduce_time(double bytes, std::size_t n) const {
  if (n < 2) return 0.0;
  const double steps = 2.0 * static_cast<double>(n - 1);
  return steps * alpha_ + steps / static_cast<double>(n) * 8.0 * bytes / beta_;
}

double AlphaBetaModel::parameter_server_time(double bytes, std::size_t n) const {
  return 2.0 * (alpha_ + static_cast<double>(n) * 8.0 * bytes / beta_);
}

}  // namespace gradwire
