// Who plays which host: before simulated time starts, each client says `hello` with its role
// (and rank), gets a `welcome` and answers it with its first report. The run starts once every
// host of the layout has registered and reported; later hellos are refused by the service.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/service/HostLayout.h"
#include "sim/service/ReportParser.h"

namespace gradwire {

struct Scenario;

class ServiceRegistration {
 public:
  /// `scenario` and `parser` must outlive the registration.
  ServiceRegistration(const Scenario& scenario, const HostLayout& layout,
                      std::uint64_t max_message_bytes, const ReportParser& parser);

  /// Opens registration once the simulated world exists: welcomes tell clients `start_ns`, the
  /// instant the network is ready. Registrations are announced on `progress` (may be null).
  void open(std::int64_t start_ns, std::ostream* progress);

  /// Handles a `hello` or a client's first report from the client at `identity`. Returns the
  /// welcome to send for a hello, nothing for a report. ProtocolError when the message is out
  /// of place or invalid; nothing is registered then.
  std::optional<nlohmann::json> handle(const std::string& identity, ProtocolMessage& message);

  /// Frees the host the client at `identity` registered as, before the run starts (its
  /// connection closed, or it did not answer its welcome in time): another client may then say
  /// hello for it. Returns the host freed; nothing for an unknown client.
  std::optional<std::uint32_t> release(const std::string& identity);
  /// Hosts registered whose client has not answered its welcome yet, with their identities.
  std::vector<std::pair<std::uint32_t, std::string>> unreported_registrations() const;

  bool all_reported() const;
  /// The hosts that have not reported yet, and whether they registered, for people.
  std::string missing_hosts() const;

  /// The host the client at `identity` registered as; nothing for an unknown client.
  std::optional<std::uint32_t> host_of(const std::string& identity) const;
  /// The ZeroMQ identity of host `h`'s client; empty while nobody has registered it.
  const std::string& identity(std::uint32_t h) const { return clients_[h].identity; }
  bool worker(std::uint32_t h) const { return clients_[h].worker; }

  /// Commands to a client are numbered; its answers carry the number they answer.
  std::uint64_t seq(std::uint32_t h) const { return clients_[h].seq; }
  std::uint64_t next_seq(std::uint32_t h) { return ++clients_[h].seq; }

  /// Host `h`'s first report, which the run applies once every host has reported.
  ParsedReport take_initial(std::uint32_t h);

  /// What gradwire workers' first reports say (for summary.json): the largest model size and
  /// worker 0's device ("" when not said).
  std::int64_t parameters() const { return parameters_; }
  const std::string& device() const { return device_; }

 private:
  struct Client {
    std::string identity;  // empty: nobody has registered this host
    bool worker = true;
    std::uint64_t seq = 0;
    bool reported = false;  // answered its welcome
    std::optional<ParsedReport> initial;
  };

  nlohmann::json welcome(std::uint32_t h, const std::string& role) const;

  const Scenario& scenario_;
  HostLayout layout_;
  std::uint64_t max_message_bytes_;
  const ReportParser& parser_;
  std::int64_t start_ns_ = 0;
  std::ostream* progress_ = nullptr;

  std::vector<Client> clients_;  // index = host
  std::map<std::string, std::uint32_t> by_identity_;
  std::int64_t parameters_ = 0;
  std::string device_;
};

}  // namespace gradwire
