// The message layer of one host: an ns-3 Application that keeps one TCP connection per
// destination and delivers whole framed Messages to a handler at the simulated instant their
// last byte arrives.
//
// Real bytes travel: each frame is cut into ns-3 packets built from the buffer
// (Create<Packet>(ptr, n)) as the socket's send buffer allows, and the receiver copies the bytes
// out (Packet::CopyData) and reassembles frames. Sockets are created in StartApplication or
// lazily on first Send, never before Simulator::Run() (ns-3 crashes otherwise).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <ns3/application.h>
#include <ns3/ipv4-address.h>
#include <ns3/socket.h>

#include "nodes/transport/Endpoint.h"
#include "nodes/transport/FrameReader.h"
#include "nodes/transport/Message.h"

namespace gradwire {

class DatagramTransport;
class LossLedger;
class Network;
struct TransportConfig;

class Messenger : public ns3::Application, public Endpoint {
 public:

  static ns3::TypeId GetTypeId();
  Messenger();
  ~Messenger() override;

  /// `self`: this host's index; `addresses[i]`: address of host i; `port`: listening port
  /// used by every host. Call before the simulation starts.
  void Configure(std::uint32_t self, std::vector<ns3::Ipv4Address> addresses,
                 std::uint16_t port);

  /// Carries messages as UDP datagrams (nodes/transport/DatagramTransport) instead of TCP; `mtu` sizes
  /// the datagrams, `ledger` (may be null) records lost gradient bytes. Call after the
  /// messenger is installed on its node (InstallOnHosts) and before the simulation starts.
  void UseDatagrams(const TransportConfig& config, std::uint32_t mtu, LossLedger* ledger);

  /// Called for every complete message received, in arrival order per connection.
  void SetHandler(Handler handler) override;

  /// Queues `message` for host `destination` (message.source is set to this host). The bytes
  /// leave as TCP allows; returns immediately. Sending to oneself is a logic error.
  void Send(std::uint32_t destination, Message message) override;

  std::uint32_t self() const override { return self_; }
  /// Frame bytes (header + payload) handed to TCP so far, and received complete.
  std::uint64_t bytes_sent() const override;
  std::uint64_t bytes_received() const { return bytes_received_; }
  /// True when every queued byte has been accepted by the sockets.
  bool idle() const;

  /// Installs one Messenger on every host of `network` (host i listens on `port` and knows
  /// every other host's address), starting at `start_s`. Index i of the result is host i.
  static std::vector<ns3::Ptr<Messenger>> InstallOnHosts(const Network& network,
                                                         std::uint16_t port = 9000,
                                                         double start_s = 0.0);

  /// The UDP transport when UseDatagrams was called (for its counters), else null.
  const DatagramTransport* datagrams() const { return datagrams_.get(); }

 private:
  struct Connection {
    ns3::Ptr<ns3::Socket> socket;
    bool connected = false;
    std::uint32_t chunk = 0;  // bytes per Send(): whole TCP segments, about 64 KB
    struct Frame {
      std::uint8_t header[kFrameHeaderBytes];
      std::vector<std::uint8_t> payload;  // the message's own bytes, moved in, not copied
      std::size_t size() const { return kFrameHeaderBytes + payload.size(); }
    };
    std::deque<Frame> frames;  // whole frames waiting to be sent
    std::size_t offset = 0;    // bytes of frames.front() already sent
  };

  void StartApplication() override;
  void StopApplication() override;
  void DoDispose() override;

  Connection& ConnectionTo(std::uint32_t destination);
  void Pump(std::uint32_t destination);
  void HandleAccept(ns3::Ptr<ns3::Socket> socket, const ns3::Address& from);
  void HandleRead(ns3::Ptr<ns3::Socket> socket);
  void Deliver(Message&& message);

  std::uint32_t self_ = 0;
  std::uint16_t port_ = 0;
  std::vector<ns3::Ipv4Address> addresses_;
  Handler handler_;
  ns3::Ptr<ns3::Socket> listener_;
  std::map<std::uint32_t, Connection> outgoing_;
  std::map<ns3::Socket*, std::pair<ns3::Ptr<ns3::Socket>, std::unique_ptr<FrameReader>>> incoming_;
  std::vector<std::uint8_t> first_chunk_;  // a frame's header and first payload bytes
  std::uint64_t bytes_sent_ = 0;
  std::uint64_t bytes_received_ = 0;
  // The UDP transport when the scenario asks for it (UseDatagrams); null: TCP.
  std::unique_ptr<DatagramTransport> datagrams_;
};

}  // namespace gradwire
