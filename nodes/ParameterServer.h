// Synchronous parameter server (Li et al., OSDI 2014), the simplest data-parallel scheme:
// every worker pushes its encoded gradient to one server host; when all n pushes of a step
// have arrived, the server averages them (in the compressed domain when the codec is
// summable, otherwise by decoding each) and sends the averaged gradient back to every worker,
// losslessly in whichever of the dense and sparse formats is smaller. Each worker applies the
// same update to its replica, so replicas stay identical.
//
// Multi-round codecs (codecs/MultiRoundCodec.h) run each round through the server: kSum
// rounds are pushed as dense vectors and the sum is sent back; kReduce rounds are combined by
// the server's codec instance (reduce_round) and the result sent back; kBroadcast rounds go
// from the root to the server, which relays them to the other workers (and may observe them).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "codecs/Codec.h"
#include "nodes/Collective.h"
#include "nodes/Message.h"

namespace gradwire {

class Endpoint;
class DenseCodec;
class MultiRoundCodec;
struct Round;
struct RoundOutcome;

class ParameterServer : public Collective {
 public:
  /// `workers[r]`: worker r's endpoint; `server`: the server host's endpoint; `codecs[r]`:
  /// worker r's codec; `server_codec`: a codec of the same kind the server decodes with. All
  /// must outlive the collective.
  ParameterServer(std::vector<Endpoint*> workers, Endpoint* server, std::vector<Codec*> codecs,
                  Codec* server_codec);
  ~ParameterServer() override;

  void contribute(int rank, std::int64_t step, const at::Tensor& gradient, Done done) override;
  int workers() const override { return static_cast<int>(workers_.size()); }

 private:
  struct StepState;
  struct WorkerState;
  void add_to_sum(StepState& s, Bytes&& payload) const;
  void on_push(Message&& message);
  void on_pull(int rank, Message&& message);
  void send_round(int rank, Round&& round);
  void continue_exchange(int rank, RoundOutcome&& outcome);
  void finish(int rank, const at::Tensor& update);
  void reply_all(std::uint64_t step, std::uint32_t round, const at::Tensor& result);

  std::vector<Endpoint*> workers_;
  Endpoint* server_;
  std::vector<Codec*> codecs_;
  Codec* server_codec_;
  MultiRoundCodec* server_multi_ = nullptr;
  std::unique_ptr<DenseCodec> dense_;  // carries the float vectors of kSum rounds
  std::vector<std::unique_ptr<WorkerState>> states_;
  // Server side, per (step, exchange round).
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::unique_ptr<StepState>> steps_;
};

}  // namespace gradwire
