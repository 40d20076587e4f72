// Batch-normalisation statistics are buffers, not parameters: no scheme sends them, and each
// worker keeps the running mean and variance of its own batches. A model evaluated on
// parameters averaged over workers (gossip, Leader SGD) or kept by a server (async parameter
// server) takes the mean of the workers' statistics, the estimate that matches averaged
// parameters best.
#pragma once

#include <memory>
#include <vector>

namespace gradwire {

class Model;

/// Sets every floating-point buffer of `target` to the mean of the same buffer over the
/// non-null `workers`, and every integer buffer (batch counters) to the first worker's. The
/// models must share one architecture; nothing changes when no worker is given.
void load_mean_buffers(Model& target, const std::vector<std::shared_ptr<Model>>& workers);

}  // namespace gradwire
