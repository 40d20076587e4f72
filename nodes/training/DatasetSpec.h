// A scenario's `dataset`, resolved: the kind's settings and how the training set is split
// between the workers.
#pragma once

#include <cstdint>
#include <string>

#include "nodes/training/Dataset.h"

namespace gradwire {

struct DatasetSpec {
  std::string kind = "fashion-mnist";  ///< a DatasetRegistry name
  std::string path = kDefaultFashionMnistDir;
  bool augment = false;                ///< images: random crop + flip of training batches
  TextConfig text;                     ///< kind "text" (its path is `path`)
  std::int64_t train_limit = 0;  ///< 0: all samples
  std::int64_t test_limit = 0;
  SyntheticConfig synthetic;
  std::string partition = "iid";  ///< "iid" | "dirichlet"
  double alpha = 0.5;             ///< Dirichlet concentration
};

}  // namespace gradwire
