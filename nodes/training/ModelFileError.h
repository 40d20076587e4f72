// A model file that cannot be used: missing, not TorchScript, without parameters, or made for
// other data. The message says which file and what was wrong; the scenario loader reports it
// under `model.path` (exit 2).
#pragma once

#include <stdexcept>

namespace gradwire {

class ModelFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gradwire
