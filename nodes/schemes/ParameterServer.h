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
//
// Faults (nodes/schemes/Faults.h; single-round codecs only): the server waits for the pushes of the
// workers it believes live. `timeout` after the first push of a step, if pushes are missing,
// it pings the missing workers (ground truth): those that are down are excluded ("detected"),
// the step is aggregated over the pushes it has (mean over the contributors) and later steps
// no longer wait for them. A live but slow worker is waited for. A rejoining worker sends a
// join request to the server; the server admits it from step s = (highest step pushed) + 2
// (no one can have pushed s yet), and when it aggregates step s - 1 it asks a live worker (the
// donor, lowest rank) to send its parameters to the newcomer: that message overtakes nothing,
// since it travels on the same connection just before the donor's step s - 1 reply, so the
// donor sends exactly the parameters every replica has at the start of step s.
//
// Partial participation (nodes/schemes/Participation.h; single-round codecs, without faults):
// a step is a round. Round r starts when the server closes round r - 1 (round 0 when the
// workers first start) and only its sampled clients compute and push. The server closes the
// round when every sampled client's update has arrived, or at the deadline, and aggregates the
// updates that count (the mean over them; a client that went away since the round started is
// dropped, as is an update after the deadline). It sends the result to every worker, sampled
// or not, so every replica applies the same updates; a round with no update sends an empty
// reply and the replicas stay as they are. A client that went away before pushing sends
// nothing; one whose round closed before it finished computing sends nothing either and takes
// the round's result.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "codecs/Codec.h"
#include "nodes/schemes/Collective.h"
#include "nodes/schemes/Faults.h"
#include "nodes/transport/Message.h"

namespace gradwire {

class Endpoint;
class DenseCodec;
class MultiRoundCodec;
class Participation;
class PhaseLedger;
struct Round;
struct RoundOutcome;

class ParameterServer : public Collective, public FaultTolerant {
 public:
  /// `workers[r]`: worker r's endpoint; `server`: the server host's endpoint; `codecs[r]`:
  /// worker r's codec; `server_codec`: a codec of the same kind the server decodes with. All
  /// must outlive the collective. `participation` (may be null: every worker, every round)
  /// samples the rounds; it must outlive the collective too. `phases` (may be null) is where
  /// each step's push and pull times are added, without faults or participation.
  ParameterServer(std::vector<Endpoint*> workers, Endpoint* server, std::vector<Codec*> codecs,
                  Codec* server_codec, Participation* participation = nullptr,
                  PhaseLedger* phases = nullptr);
  ~ParameterServer() override;

  void contribute(int rank, std::int64_t step, const at::Tensor& gradient, Done done) override;
  int workers() const override { return static_cast<int>(workers_.size()); }
  bool takes_part(int rank, std::int64_t step) override;
  void sit_out(int rank, std::int64_t step, Done done) override;

  void enable_faults(double timeout_s, FaultLog log) override;
  void leave(int rank) override;
  void rejoin(int rank, Resume resume) override;
  void set_parameter_source(std::function<at::Tensor(int)> source) override {
    parameters_of_ = std::move(source);
  }

 private:
  struct StepState;
  struct WorkerState;
  /// One exchange's (step, round) instants, for the phase ledger.
  struct ExchangeClock;
  /// The codec that adds the pushes: the server's, or dense fp32 for a multi-round codec's
  /// kSum rounds.
  const Codec& summing_codec() const;
  /// Adds a push to the step's sum now, in arrival order.
  void add_to_sum(StepState& s, Bytes&& payload) const;
  void add_decoded(StepState& s, const at::Tensor& g) const;
  /// Adds worker `rank`'s push in rank order: one that arrives before a lower rank's waits
  /// (decoded already, when its codec decodes before adding). Floating-point addition depends
  /// on its order, so the aggregate, and the training, do not then depend on which worker's
  /// link is faster: every network trains alike (what a step trace's replay relies on).
  void add_in_rank_order(StepState& s, int rank, Bytes&& payload) const;
  void on_push(Message&& message);
  void on_pull(int rank, Message&& message);
  void send_round(int rank, Round&& round);
  void continue_exchange(int rank, RoundOutcome&& outcome);
  void finish(int rank, const at::Tensor& update);
  void reply_all(std::uint64_t step, std::uint32_t round, const at::Tensor& result);
  // --- phases ---
  bool timing_phases() const { return phases_ != nullptr && !faults_ && participation_ == nullptr; }
  void clock_push(std::uint64_t step, std::uint32_t round);
  void clock_all_in(std::uint64_t step, std::uint32_t round, int replies);
  void clock_reply(const Message& message);
  // --- faults ---
  bool expected(int rank, std::uint64_t step) const;
  bool step_complete(const StepState& s, std::uint64_t step) const;
  void complete_step(std::uint64_t step);
  void complete_ready_steps();
  void watch(std::uint64_t step);
  void exclude(int rank, std::uint64_t step);
  void on_join(int rank);
  // --- partial participation ---
  void begin_round(std::int64_t round);
  void on_round_push(Message&& message);
  void close_round(std::int64_t round);
  /// The round's reply when it reached the worker before the worker was done with the round:
  /// taken (in a fresh event) and true; false when it has not arrived.
  bool take_early_reply(int rank);

  std::vector<Endpoint*> workers_;
  Endpoint* server_;
  std::vector<Codec*> codecs_;
  Codec* server_codec_;
  MultiRoundCodec* server_multi_ = nullptr;
  std::unique_ptr<DenseCodec> dense_;  // carries the float vectors of kSum rounds
  std::vector<std::unique_ptr<WorkerState>> states_;
  // Server side, per (step, exchange round).
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::unique_ptr<StepState>> steps_;

  // Faults (inactive unless enable_faults was called).
  bool faults_ = false;
  double timeout_s_ = 0;
  FaultLog log_;
  std::function<at::Tensor(int)> parameters_of_;
  std::vector<bool> down_;                 // ground truth: the host is gone
  std::vector<bool> live_;                 // the server's view
  std::vector<std::int64_t> member_from_;  // first step a (re)joined worker pushes
  std::vector<Resume> resume_;             // rejoining workers, until their parameters arrive
  std::int64_t max_pushed_ = -1;           // highest step any push carried
  std::int64_t last_completed_ = -1;       // steps complete in order
  std::map<std::int64_t, std::vector<int>> joins_;  // step s -> workers admitted from s

  // Partial participation (inactive when null).
  Participation* participation_ = nullptr;

  // Phase timing (inactive when null), per (step, exchange round) in flight.
  PhaseLedger* phases_ = nullptr;
  std::map<std::pair<std::uint64_t, std::uint32_t>, ExchangeClock> clocks_;
  std::int64_t closed_ = -1;  // rounds close in order: the latest closed
};

}  // namespace gradwire
