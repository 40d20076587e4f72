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
// Pipelined encoding (codecs that declare CodecTraits::pipelines_chunks, e.g. GradiVeQ, with
// codec time charged on the workers' devices): a worker encodes its chunks in the order its
// reduce-scatter needs them (its own position first, then each predecessor's), so its first
// chunk leaves once that chunk's share of the encode is done and each later hop waits only
// until its own chunk is encoded, while the network carries the chunks before it. The encode's
// charged time is shared among the chunks by payload size. Off under faults.
//
// Workers advance hop by hop as messages arrive; a hop's message that arrives early is kept
// until its worker gets there.
//
// Faults (nodes/schemes/Faults.h; single-round codecs only). The ring of step t is the sorted list of
// the ranks that are members at t; each rank's membership is an interval pattern known to all
// (member before its exclusion step, and again from its rejoin step), and the epoch of step t
// (the number of membership changes at or before t) tags every message, so messages of an old
// ring are discarded. Detection: a rank that makes no progress for `timeout` pings the members
// of its ring (ground truth); if some are down, they are excluded from the oldest step a
// survivor is still in (f). Survivors already in a step >= f restart its all-reduce on the new
// ring with their own contribution (dense when the codec sums, so a codec's error feedback is
// not charged twice). If a survivor had already completed the oldest step (the gone rank died
// after sending its last all-gather hop to it), that step cannot be redone, so f is the next
// step and the survivors still in the old one receive the completed aggregate from it
// ("recover" message); every replica applies the same update either way.
// Simplification (docs/scenarios.md, "Workers that leave and rejoin"): the membership change
// is agreed instantly by every rank at the moment one detects it, as if written to a
// coordination service; no bytes are simulated for it. The join request and the parameters a
// newcomer receives do cross the network: the newcomer asks the lowest live rank (the donor),
// which admits it from step s = (its current step) + 2 (no survivor can be in s yet) and sends
// its parameters when it completes step s - 1.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "codecs/Codec.h"
#include "nodes/schemes/Collective.h"
#include "nodes/schemes/Faults.h"
#include "nodes/transport/Message.h"

namespace gradwire {

class Endpoint;
class DenseCodec;
class DeviceStreams;
class MultiRoundCodec;
struct Round;

class RingAllReduce : public Collective, public FaultTolerant {
 public:
  /// `messengers[r]` is worker r's host endpoint; `codecs[r]` its codec. Both must outlive the
  /// collective. Installs message handlers on the endpoints.
  RingAllReduce(std::vector<Endpoint*> messengers, std::vector<Codec*> codecs);
  ~RingAllReduce() override;

  void contribute(int rank, std::int64_t step, const at::Tensor& gradient, Done done) override;
  int workers() const override { return static_cast<int>(messengers_.size()); }

  /// The workers' devices (one per worker, outliving the collective), where codec work is
  /// charged: lets codecs that pipeline their chunks send each as soon as it is encoded.
  void set_devices(std::vector<DeviceStreams*> devices);

  void enable_faults(double timeout_s, FaultLog log) override;
  void leave(int rank) override;
  void rejoin(int rank, Resume resume) override;
  void set_parameter_source(std::function<at::Tensor(int)> source) override {
    parameters_of_ = std::move(source);
  }

 private:
  struct RankState;
  void on_message(int rank, Message&& message);
  void start_round(int rank, Round&& round);
  void start_operation(int rank);
  void advance(int rank);
  /// kChunkSum's all-gather: decodes the fully reduced chunk in slot `index` into its part.
  void decode_part(int rank, int index);
  /// Pipelined encoding: when each of the rank's chunks is encoded, given that the encode
  /// just charged started at `start`; releases the first chunk's send.
  void pipeline_chunks(int rank, double start);
  /// Pipelined encoding: true when the rank's own chunk `index` is not encoded yet (an
  /// advance is then scheduled for the instant it is).
  bool awaits_encode(int rank, int index);
  /// Completes the current operation of `rank`; returns true when its step is over.
  bool complete_operation(int rank);
  /// Sends `payload` to the ring successor. Reduce-scatter moves its partial sums in: the
  /// all-gather brings every such chunk back fully reduced before the operation completes.
  void send_next(int rank, std::uint32_t phase, std::uint32_t hop, Bytes payload);
  void join_ring(int rank);  // sets the rank's ring (members, position, epoch) for its step
  // --- faults ---
  bool member(int rank, std::int64_t step) const;
  std::uint32_t epoch(std::int64_t step) const;
  std::int64_t current_step(int rank) const;
  void restart(int rank);
  void watch(int rank);
  void exclude(const std::vector<int>& gone);
  void on_control(int rank, Message&& message);

  std::vector<Endpoint*> messengers_;
  std::vector<Codec*> codecs_;
  std::vector<std::unique_ptr<RankState>> ranks_;
  std::unique_ptr<DenseCodec> dense_;  // carries the float vectors of kSum rounds
  std::vector<DeviceStreams*> devices_;  // empty: codec work is free (nothing to pipeline)

  // Faults (inactive unless enable_faults was called).
  bool faults_ = false;
  double timeout_s_ = 0;
  FaultLog log_;
  std::function<at::Tensor(int)> parameters_of_;
  std::vector<bool> down_;                    // ground truth: the host is gone
  std::vector<std::int64_t> excluded_from_;   // first step without the rank (max: never)
  std::vector<std::int64_t> rejoined_from_;   // first step with it again (max: never)
  std::vector<Resume> resume_;
};

}  // namespace gradwire
