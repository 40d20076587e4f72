// Raised when the workers' training loss stops being a number (NaN or infinite): every later
// step would only spread non-finite parameters, and a codec fed them fails somewhere far from
// the cause. The message names the step, each worker's loss and the last finite mean.
#pragma once

#include <stdexcept>

namespace gradwire {

class TrainingDiverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gradwire
