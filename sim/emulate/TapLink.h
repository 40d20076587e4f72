// Joins a TAP device to a host's ns-3 network device: every frame the namespace's kernel
// sends on the TAP is handed to the host's device (through the node's traffic-control layer,
// so the host's uplink queue discs, impairments included, see it), and every packet the
// device receives for the host is written to the TAP. The ns-3 node's own IPv4 interface on
// that device is taken down, so the real kernel behind the TAP is the host's only IP stack.
//
// Two kinds of device: those that resolve neighbours with ARP (Wi-Fi) see Ethernet
// addresses, and the TAP carries the device's own MAC so ARP and frames agree on both
// sides; point-to-point and LTE devices carry bare IP packets, and the TAP runs without ARP.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <ns3/mac48-address.h>
#include <ns3/net-device.h>
#include <ns3/node.h>
#include <ns3/packet.h>
#include <ns3/ptr.h>

namespace gradwire {

struct TapLinkCounters {
  std::uint64_t sent_packets = 0;  ///< IP packets from the host (TAP) into ns-3
  std::uint64_t sent_bytes = 0;
  std::uint64_t received_packets = 0;  ///< IP packets ns-3 delivered to the host (TAP)
  std::uint64_t received_bytes = 0;
  std::uint64_t dropped_frames = 0;  ///< frames from the TAP the device cannot carry (IPv6, ...)
};

class TapLink {
 public:
  /// `device`: the host's network device (on its node, with an IPv4 interface); `tap_fd`: an
  /// open TAP; `tap_mac`: the TAP's address. Must be made before the simulation runs.
  TapLink(ns3::Ptr<ns3::NetDevice> device, int tap_fd, ns3::Mac48Address tap_mac);
  ~TapLink();
  TapLink(const TapLink&) = delete;
  TapLink& operator=(const TapLink&) = delete;

  /// Whether the device resolves neighbours with ARP (so does the TAP).
  static bool uses_arp(const ns3::Ptr<ns3::NetDevice>& device);

  /// Starts reading the TAP (a thread that schedules each frame into the real-time
  /// simulator). Call once, before Simulator::Run.
  void Start();
  /// Stops reading; frames not yet handed over are dropped. Idempotent.
  void Stop();

  /// Read after the simulation has stopped.
  const TapLinkCounters& counters() const { return counters_; }

 private:
  void ReadLoop();
  void FromTap(const std::vector<std::uint8_t>& frame);
  void FromDevice(ns3::Ptr<ns3::NetDevice> device, ns3::Ptr<const ns3::Packet> packet,
                  std::uint16_t protocol, const ns3::Address& from, const ns3::Address& to,
                  ns3::NetDevice::PacketType type);

  ns3::Ptr<ns3::NetDevice> device_;
  ns3::Ptr<ns3::Node> node_;
  int fd_;
  ns3::Mac48Address tap_mac_;
  bool arp_;
  int stop_pipe_[2] = {-1, -1};
  std::thread reader_;
  TapLinkCounters counters_;
};

}  // namespace gradwire
