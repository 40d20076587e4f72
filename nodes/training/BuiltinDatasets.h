// The built-in dataset kinds' declarations (nodes/training/BuiltinDatasets.cpp);
// DatasetRegistry adds them in the order listings show. A new kind is a new file with one such
// function, declared here and added in DatasetRegistry's constructor.
#pragma once

#include <cstdint>

#include "nodes/training/DatasetRegistry.h"

namespace gradwire {

DatasetInfo fashion_mnist_dataset();
/// cifar10 or cifar100.
DatasetInfo cifar_dataset(std::int64_t classes);
DatasetInfo text_dataset();
DatasetInfo synthetic_dataset();

}  // namespace gradwire
