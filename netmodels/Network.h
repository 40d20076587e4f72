// The network as the engine sees it: a set of hosts with addresses, nothing about the medium.
// In the spirit of ASTRA-sim's AstraNetworkAPI: a backend is a handful of calls. Ethernet,
// Wi-Fi or LTE details stay inside the builder that implements this interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <ns3/ipv4-address.h>
#include <ns3/node.h>
#include <ns3/ptr.h>

namespace gradwire {

class Network {
 public:
  virtual ~Network() = default;

  /// Family name from the scenario ("ethernet", ...).
  virtual std::string family() const = 0;

  /// Hosts that run gradwire applications, numbered 0..host_count()-1. Workers take the first
  /// ranks; a server host, when the topology needs one, comes last.
  virtual std::size_t host_count() const = 0;
  virtual ns3::Ptr<ns3::Node> host(std::size_t index) const = 0;
  virtual ns3::Ipv4Address address(std::size_t index) const = 0;

  /// One-line human description for logs ("ethernet star, 5 hosts, 1Gbps, 50us, MTU 1500").
  virtual std::string describe() const = 0;

  /// Simulated second from which hosts can reach each other: Wi-Fi stations must associate and
  /// LTE UEs attach first (packets sent earlier are dropped and TCP would wait out a SYN
  /// retransmission timeout). Applications start at this time.
  virtual double ready_time_s() const { return 0.0; }

  /// Counts of what happened inside the network that a study may want with its results (LTE
  /// handovers, ...), by name, as they stand now: read after the simulation ran, they are the
  /// run's totals, which the engine writes to summary.json's `network_events`. Empty (the
  /// default): nothing to report, and summary.json has no `network_events`.
  virtual std::map<std::string, std::uint64_t> event_counts() const { return {}; }

  /// Joules each host's radio has used since the simulation started, by host index, for the
  /// hosts that have a radio (Wi-Fi stations, an AP host, LTE UEs); a wired host has no entry,
  /// and a network without radios (the default, Ethernet) reports none. Read it while the
  /// simulation still holds the run (before Simulator::Destroy): it integrates up to now.
  virtual std::map<std::size_t, double> radio_joules() const { return {}; }
};

}  // namespace gradwire
