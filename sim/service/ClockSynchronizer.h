// Conservative time synchronisation between the clients and ns-3's event loop, one command at a
// time (PROTOCOL.md). Each client's announced next event (`next_ns`) is an ns-3 event, its
// wake-up, so ns-3 never runs past an instant at which a client could still send. When ns-3
// reaches a wake-up, or a message's last byte reaches a client's host, the client gets one
// command for that instant and its report is applied inside that same ns-3 event: its sends
// enter ns-3 exactly where an in-process worker's would, which is what keeps a run with
// worker processes bit-identical to the in-process run. Also decides how the run ends.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <ns3/event-id.h>

#include "sim/service/HostLayout.h"

namespace gradwire {

class ServiceMetrics;
class ServiceRegistration;
class SimulatedWorld;
struct Message;
struct ParsedEvaluation;
struct ParsedReport;
struct ParsedSend;
struct StepRecord;

class ClockSynchronizer {
 public:
  using Payloads = std::vector<const std::vector<std::uint8_t>*>;

  /// The service's side: sending a command to a client and waiting for its checked answer.
  /// Nothing comes back when the client is lost (the run is then ending).
  class Exchange {
   public:
    virtual std::optional<ParsedReport> exchange_report(std::uint32_t h, nlohmann::json command,
                                                        const Payloads& payloads,
                                                        std::int64_t command_ns) = 0;
    virtual std::optional<ParsedEvaluation> exchange_evaluation(std::uint32_t h,
                                                                nlohmann::json command) = 0;
    /// A line for the service's log.
    virtual void note(const std::string& line) = 0;

   protected:
    ~Exchange() = default;
  };

  /// All must outlive the synchroniser.
  ClockSynchronizer(const HostLayout& layout, const ServiceRegistration& registration,
                    ServiceMetrics& metrics, Exchange& exchange);

  /// The current simulated instant, in ns.
  static std::int64_t now_ns();

  /// Takes over delivery on every host's Messenger of `world`; detach() before it dies.
  void attach(SimulatedWorld& world);
  void detach() { world_ = nullptr; }

  /// Applies host `h`'s checked report: its sends go to its Messenger at their stamps, its step
  /// records and updates are recorded, and its wake-up is set to its announced next event.
  void apply_report(std::uint32_t h, ParsedReport&& report);

  /// Runs ns-3 until the run ends or nothing is left to simulate (not at all when the run is
  /// already ending).
  void run();
  /// After run(): a run that did not end by itself stalled, with hosts still waiting.
  void end_if_stalled();

  /// Ends the run; the first reason given is the one reported.
  void finish_run(const std::string& reason, const std::string& message);
  /// Host `h`'s client is gone: no more commands to it, and the run ends.
  void lose(std::uint32_t h, const std::string& why);

  bool lost(std::uint32_t h) const { return clocks_[h].lost; }
  /// The run is ending: no more commands.
  bool ending() const { return ending_; }
  /// Empty while the run goes on.
  const std::string& end_reason() const { return end_reason_; }
  const std::string& end_message() const { return end_message_; }

 private:
  struct HostClock {
    bool finished = false;
    bool lost = false;
    ns3::EventId wake;
    std::int64_t wake_ns = -1;  // -1: no wake-up pending
  };

  /// What the service remembers of a message in flight between two hosts. A Messenger keeps one
  /// TCP connection per destination, so deliveries of a (source, destination) pair come in send
  /// order and a FIFO per pair is enough.
  struct InFlight {
    bool data = true;  // false: the client gave only a size; deliver the size, not the zeros
    std::int64_t sent_ns = 0;
  };

  void inject(std::uint32_t h, ParsedSend&& send);
  void send_now(std::uint32_t h, ParsedSend&& send);
  void set_wake(std::uint32_t h, std::optional<std::int64_t> at);
  nlohmann::json advance_command(std::uint32_t h) const;
  void wake(std::uint32_t h);
  void on_delivery(std::uint32_t h, Message&& message);
  void on_step(const StepRecord& record);

  HostLayout layout_;
  const ServiceRegistration& registration_;
  ServiceMetrics& metrics_;
  Exchange& exchange_;
  SimulatedWorld* world_ = nullptr;  // set while the service serves a run

  std::vector<HostClock> clocks_;  // index = host
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::deque<InFlight>> in_flight_;
  bool running_ = false;  // inside Simulator::Run
  bool ending_ = false;   // Stop() requested: no more commands
  std::string end_reason_;
  std::string end_message_;
};

}  // namespace gradwire
