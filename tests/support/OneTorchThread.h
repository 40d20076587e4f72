// Test support: LibTorch on one intra-op thread for the whole test program. Its default (one
// per core) spins threads that fight ctest's parallel programs and ns-3 on a 2-core machine,
// and makes timings and reductions depend on the machine. Include once per test program.
#pragma once

#include <gtest/gtest.h>
#include <torch/utils.h>

namespace gradwire::testing {

class OneTorchThread : public ::testing::Environment {
 public:
  void SetUp() override { torch::set_num_threads(1); }
};

// Registered once per program: headers are included by one test file per program here.
inline const auto* const kOneTorchThread =
    ::testing::AddGlobalTestEnvironment(new OneTorchThread);

}  // namespace gradwire::testing
