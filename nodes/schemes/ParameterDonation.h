// Handing the current parameters to workers that rejoin: the synchronous collectives
// record (newcomer, step) pairs when they admit a worker, and the donor sends its replica over
// the network once it holds the parameters of that step.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace gradwire {

class Endpoint;
class WallClockAccount;

/// Sends `parameters()` (dense float32 payload, message `kind`, step `step`) from `from` to every
/// newcomer in `pending` admitted at `step`, and removes them from `pending`. Encoding is
/// charged to `account` (may be null).
void donate_parameters(Endpoint& from, std::vector<std::pair<int, std::int64_t>>& pending,
                       std::int64_t step, std::uint32_t kind,
                       const std::function<at::Tensor()>& parameters, WallClockAccount* account);

}  // namespace gradwire
