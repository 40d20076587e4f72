#include "nodes/schemes/Collective.h"

#include <stdexcept>
#include <string>

#include <ATen/core/Tensor.h>

namespace gradwire {

void Collective::contribute_bucket(int rank, std::int64_t step, int bucket,
                                   const at::Tensor& slice, Done done) {
  if (bucket != 0) {
    throw std::logic_error("Collective: bucket " + std::to_string(bucket) +
                           " offered to a collective of one bucket");
  }
  contribute(rank, step, slice, std::move(done));
}

void Collective::sit_out(int rank, std::int64_t step, Done) {
  throw std::logic_error("Collective: worker " + std::to_string(rank) + " sat out step " +
                         std::to_string(step) + " of a collective without participation");
}

}  // namespace gradwire
