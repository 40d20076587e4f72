// An in-process driver for MultiRoundCodec exchanges: runs one step of n workers' codecs
// centrally, with no network, exactly as the collectives do over ns-3 (MultiRoundCodec.h):
//   kSum        the workers' float vectors are added (in rank order) and every worker gets
//               the sum;
//   kBroadcast  the root's payload goes to every worker (and, parameter-server style, to the
//               server instance's observe_broadcast);
//   kReduce     every worker's payload is combined by reduce_round(): on the server instance
//               when one is given (parameter server), else on each worker's own instance
//               (ring all-gather).
// It checks that the workers agree on each round's operation (and root) and on when the step
// ends, and records what each round carried, so tests can compare against declared sizes.
// Header-only; codecs/ only (no ns-3).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "codecs/MultiRoundCodec.h"

namespace gradwire::testing {

/// What one round put on the wire, per worker.
struct RoundRecord {
  RoundOp op = RoundOp::kSum;
  int root = 0;
  /// kSum: each worker's vector length; kBroadcast: the root's payload bytes at [root], 0
  /// elsewhere; kReduce: each worker's payload bytes.
  std::vector<std::int64_t> sizes;
  /// The payloads themselves (kBroadcast: root's only; kReduce: everyone's).
  std::vector<Bytes> payloads;
};

struct ExchangeTrace {
  std::vector<RoundRecord> rounds;
  std::vector<torch::Tensor> results;  ///< exchange_result() of every worker

  /// Bytes one worker contributes in this step counting a kSum vector as 4 bytes per float
  /// (the payload of a dense fp32 all-reduce, before the collective's own overhead).
  std::int64_t contributed_bytes(std::size_t rank) const {
    std::int64_t total = 0;
    for (const auto& r : rounds) total += (r.op == RoundOp::kSum ? 4 : 1) * r.sizes.at(rank);
    return total;
  }
};

/// Runs one exchange. `grads[r]` is worker r's gradient; `server` (may be null) is a
/// parameter server's instance (rank -1) that observes broadcasts and performs kReduce.
inline ExchangeTrace run_exchange(const std::vector<MultiRoundCodec*>& workers,
                                  const std::vector<torch::Tensor>& grads,
                                  MultiRoundCodec* server = nullptr, int max_rounds = 16) {
  if (workers.empty() || workers.size() != grads.size()) {
    throw std::invalid_argument("run_exchange: one gradient per worker");
  }
  const std::size_t n = workers.size();
  ExchangeTrace trace;
  std::vector<std::optional<Round>> rounds(n);
  for (std::size_t r = 0; r < n; ++r) rounds[r] = workers[r]->begin_exchange(grads[r]);

  for (int index = 0; rounds[0].has_value(); ++index) {
    if (index >= max_rounds) throw std::logic_error("run_exchange: too many rounds");
    for (std::size_t r = 1; r < n; ++r) {
      if (!rounds[r] || rounds[r]->op != rounds[0]->op ||
          (rounds[0]->op == RoundOp::kBroadcast && rounds[r]->root != rounds[0]->root)) {
        throw std::logic_error("run_exchange: workers disagree on round " + std::to_string(index));
      }
    }
    RoundRecord record;
    record.op = rounds[0]->op;
    record.root = rounds[0]->root;
    record.sizes.assign(n, 0);
    std::vector<RoundOutcome> outcomes(n);
    switch (record.op) {
      case RoundOp::kSum: {
        torch::Tensor sum;
        for (std::size_t r = 0; r < n; ++r) {
          const torch::Tensor& v = rounds[r]->values;
          record.sizes[r] = v.numel();
          if (r > 0 && v.numel() != sum.numel()) {
            throw std::logic_error("run_exchange: kSum vectors of different lengths");
          }
          sum = r == 0 ? v.clone() : sum + v;
        }
        for (auto& o : outcomes) o.sum = sum.clone();
        break;
      }
      case RoundOp::kBroadcast: {
        const auto root = static_cast<std::size_t>(record.root);
        if (root >= n) throw std::logic_error("run_exchange: broadcast root out of range");
        const Bytes payload = rounds[root]->payload;
        record.sizes[root] = static_cast<std::int64_t>(payload.size());
        record.payloads.push_back(payload);
        if (server != nullptr) server->observe_broadcast(index, payload);
        for (auto& o : outcomes) o.broadcast = payload;
        break;
      }
      case RoundOp::kReduce: {
        std::vector<ByteSpan> spans;
        for (std::size_t r = 0; r < n; ++r) {
          record.sizes[r] = static_cast<std::int64_t>(rounds[r]->payload.size());
          record.payloads.push_back(rounds[r]->payload);
        }
        for (const auto& p : record.payloads) spans.emplace_back(p);
        if (server != nullptr) {
          const torch::Tensor sum = server->reduce_round(index, spans);
          for (auto& o : outcomes) o.sum = sum.clone();
        } else {
          for (std::size_t r = 0; r < n; ++r) outcomes[r].sum = workers[r]->reduce_round(index, spans);
        }
        break;
      }
    }
    trace.rounds.push_back(std::move(record));
    for (std::size_t r = 0; r < n; ++r) {
      rounds[r] = workers[r]->continue_exchange(index, std::move(outcomes[r]));
    }
    for (std::size_t r = 1; r < n; ++r) {
      if (rounds[r].has_value() != rounds[0].has_value()) {
        throw std::logic_error("run_exchange: workers disagree on when the step ends");
      }
    }
  }
  for (auto* w : workers) trace.results.push_back(w->exchange_result());
  return trace;
}

}  // namespace gradwire::testing
