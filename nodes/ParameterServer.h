// Synchronous parameter server (Li et al., OSDI 2014), the simplest data-parallel scheme:
// every worker pushes its encoded gradient to one server host; when all n pushes of a step
// have arrived, the server averages them (in the compressed domain when the codec is
// summable, otherwise by decoding each) and sends the averaged gradient back to every worker,
// losslessly in whichever of the dense and sparse formats is smaller. Each worker applies the
// same update to its replica, so replicas stay identical.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "codecs/Codec.h"
#include "nodes/Collective.h"
#include "nodes/Message.h"

namespace gradwire {

class Endpoint;

class ParameterServer : public Collective {
 public:
  /// `workers[r]`: worker r's messenger; `server`: the server host's messenger; `codecs[r]`:
  /// worker r's codec; `server_codec`: a codec of the same kind the server decodes with. All
  /// must outlive the collective.
  ParameterServer(std::vector<Endpoint*> workers, Endpoint* server, std::vector<Codec*> codecs,
                  Codec* server_codec);
  ~ParameterServer() override;

  void contribute(int rank, std::int64_t step, const at::Tensor& gradient, Done done) override;
  int workers() const override { return static_cast<int>(workers_.size()); }

 private:
  struct StepState;
  void add_to_sum(StepState& s, Bytes&& payload) const;
  void on_push(Message&& message);
  void on_pull(int rank, Message&& message);

  std::vector<Endpoint*> workers_;
  Endpoint* server_;
  std::vector<Codec*> codecs_;
  Codec* server_codec_;
  std::vector<Done> pending_;                 // per rank: callback waiting for the pull
  std::vector<std::int64_t> pending_step_;
  std::map<std::uint64_t, std::unique_ptr<StepState>> steps_;  // server side, per step
};

}  // namespace gradwire
