// Synchronous ring all-reduce over n workers (Patarasuk & Yuan 2009; Baidu/Horovod style).
//
// Summable codecs (the codec declares Aggregation::kSummable): the gradient is cut into n
// chunks, each encoded; reduce-scatter runs n-1 hops in which every worker forwards one chunk
// payload to its successor, who adds it *in the compressed domain* (Codec::accumulate); an
// all-gather of n-1 hops then circulates the reduced chunks. Each worker sends
// 2(n-1)/n of the payload, the textbook optimum.
//
// Other codecs (sparse top-k, ...): payloads of different workers cannot be added chunk-wise,
// so the ring all-gathers whole payloads (n-1 hops) and every worker decodes and sums all n.
//
// Multi-round codecs (codecs/MultiRoundCodec.h: PowerSGD, LGC) run one operation per round
// on the same ring: kSum rounds as a chunked dense all-reduce, kReduce rounds as an all-gather
// followed by the codec's reduce_round, kBroadcast rounds forwarded hop by hop from the root.
// The choice is always the codec's declaration, never its name.
//
// Workers advance hop by hop as messages arrive; a hop's message that arrives early is kept
// until its worker gets there.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "codecs/Codec.h"
#include "nodes/Collective.h"
#include "nodes/Message.h"

namespace gradwire {

class Endpoint;
class DenseCodec;
class MultiRoundCodec;
struct Round;

class RingAllReduce : public Collective {
 public:
  /// `messengers[r]` is worker r's host endpoint; `codecs[r]` its codec. Both must outlive the
  /// collective. Installs message handlers on the endpoints.
  RingAllReduce(std::vector<Endpoint*> messengers, std::vector<Codec*> codecs);
  ~RingAllReduce() override;

  void contribute(int rank, std::int64_t step, const at::Tensor& gradient, Done done) override;
  int workers() const override { return static_cast<int>(messengers_.size()); }

 private:
  struct RankState;
  void on_message(int rank, Message&& message);
  void start_round(int rank, Round&& round);
  void start_operation(int rank);
  void advance(int rank);
  /// Completes the current operation of `rank`; returns true when its step is over.
  bool complete_operation(int rank);
  void send_next(int rank, std::uint32_t phase, std::uint32_t hop, const Bytes& payload);

  std::vector<Endpoint*> messengers_;
  std::vector<Codec*> codecs_;
  std::vector<std::unique_ptr<RankState>> ranks_;
  std::unique_ptr<DenseCodec> dense_;  // carries the float vectors of kSum rounds
};

}  // namespace gradwire
