// ns-3's event list, with a way to ask when the next event is due. A worker process
// (`gradwire worker`) runs its Worker application on a local ns-3 simulator with no network;
// to keep simulated time consistent with the emulator service it must announce the instant of
// its next local event (e.g. "compute done"), which ns3::Simulator does not expose. Installing
// this scheduler (install()) makes the current simulation's event list observable.
#pragma once

#include <cstdint>
#include <optional>

#include <ns3/map-scheduler.h>

namespace gradwire {

class LocalEventQueue : public ns3::MapScheduler {
 public:
  static ns3::TypeId GetTypeId();
  LocalEventQueue();
  ~LocalEventQueue() override;

  /// Makes the current ns-3 simulation use a LocalEventQueue (call after Simulator::Destroy and
  /// before anything is scheduled).
  static void install();

  /// Simulated time (ns) of the earliest pending event of the installed queue; nullopt when
  /// none is pending (or none is installed). Cancelled events still count: a caller may be
  /// woken for nothing, never too late.
  static std::optional<std::int64_t> next_event_ns();

 private:
  static LocalEventQueue* current_;
};

}  // namespace gradwire
