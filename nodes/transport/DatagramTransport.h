// The UDP transport of one host (`network.transport: "udp"`): messages cut into datagrams
// (nodes/transport/Datagram.h), sent without congestion control, with an application-level ARQ for the
// parts that must arrive.
//
// Sender: every fragment once, then an end-of-message marker (sent twice: losing both is
// p^2). The message is kept until the receiver acknowledges it; without an acknowledgement
// the marker is repeated after `retransmit_timeout`, doubling each time, and after
// `max_retries` tries the message is given up (the receiver is gone). A NACK names fragments
// to send again.
// Receiver: assembles each message into a zeroed buffer. A message is evaluated when its end
// marker arrives (after `reorder_window`) or `reassembly_timeout` after its latest datagram:
// if a reliable fragment (one holding bytes before the codec's LossTolerance::from) is
// missing, it NACKs them and waits; otherwise it acknowledges and delivers what it has —
// missing loss-tolerant fragments stay zero and are recorded in the LossLedger under the
// message's step. Messages from one source are handed over in the order they were sent, as
// TCP would, so protocols written for TCP stay correct.
//
// The ns-3 UDP socket carries the real bytes (Create<Packet>(ptr, n), CopyData on receive).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <ns3/event-id.h>
#include <ns3/ipv4-address.h>
#include <ns3/node.h>
#include <ns3/socket.h>

#include "netmodels/TransportConfig.h"
#include "nodes/transport/Datagram.h"
#include "nodes/transport/Message.h"

namespace gradwire {

class LossLedger;

class DatagramTransport {
 public:
  using Deliver = std::function<void(Message&&)>;

  struct Counters {
    std::uint64_t datagrams_sent = 0;
    std::uint64_t fragments_resent = 0;   ///< data fragments sent again after a NACK
    std::uint64_t markers_resent = 0;     ///< end markers repeated after a retransmit timeout
    std::uint64_t malformed = 0;          ///< datagrams dropped as unparseable or inconsistent
    std::uint64_t late = 0;               ///< data for messages already delivered
    std::uint64_t abandoned = 0;          ///< messages given up after max_retries
  };

  /// `mtu`: the links' IP MTU, from which the fragment size follows unless the config sets it.
  /// `ledger` (may be null) receives the loss of every delivered message.
  DatagramTransport(ns3::Ptr<ns3::Node> node, std::uint32_t self,
                    std::vector<ns3::Ipv4Address> addresses, std::uint16_t port,
                    const TransportConfig& config, std::uint32_t mtu, LossLedger* ledger,
                    Deliver deliver);
  ~DatagramTransport();
  DatagramTransport(const DatagramTransport&) = delete;
  DatagramTransport& operator=(const DatagramTransport&) = delete;

  /// Opens the socket (inside the simulation: ns-3 needs the stack running).
  void Start();
  /// Cancels every timer and closes the socket; nothing is sent or delivered afterwards.
  void Stop();

  void Send(std::uint32_t destination, Message message);

  /// Datagram bytes (header + body) handed to UDP, retransmissions included.
  std::uint64_t bytes_sent() const { return bytes_sent_; }
  const Counters& counters() const { return counters_; }
  /// Payload bytes carried per data datagram.
  std::uint32_t fragment_bytes() const { return fragment_bytes_; }

 private:
  struct Outgoing {
    DatagramHeader header;
    std::vector<std::uint8_t> payload;
    std::vector<Fragment> plan;
    ns3::EventId timer;
    double timeout_s = 0;
    std::uint32_t tries = 0;
  };
  struct Incoming {
    DatagramHeader header;
    std::vector<std::uint8_t> buffer;
    std::vector<Fragment> plan;
    std::vector<bool> have;
    std::size_t received = 0;
    std::size_t reliable_missing = 0;
    ns3::EventId timer;
    bool ready = false;  // complete or given up on its lossy part: waits only for its turn
  };
  struct Peer {
    std::uint32_t next_id = 0;                 // next message id we send to this peer
    std::map<std::uint32_t, Outgoing> sent;    // unacknowledged, by id
    std::uint32_t next_delivery = 0;           // next message id we hand over from this peer
    std::map<std::uint32_t, Incoming> arriving;
  };

  ns3::Ptr<ns3::Socket> socket();
  void Transmit(std::uint32_t destination, const std::vector<std::uint8_t>& datagram);
  void SendFragment(std::uint32_t destination, const Outgoing& out, std::uint32_t index);
  void SendControl(std::uint32_t destination, DatagramType type, const DatagramHeader& about,
                   const std::vector<std::uint8_t>& body = {});
  void ArmRetransmit(std::uint32_t destination, std::uint32_t id);
  void OnRetransmitTimeout(std::uint32_t destination, std::uint32_t id);

  void HandleRead(ns3::Ptr<ns3::Socket> socket);
  void OnDatagram(const ParsedDatagram& d);
  void OnData(Peer& peer, const ParsedDatagram& d);
  void OnEnd(Peer& peer, const DatagramHeader& h);
  void OnNack(Peer& peer, const ParsedDatagram& d);
  Incoming* Arriving(Peer& peer, const DatagramHeader& h);
  void Evaluate(std::uint32_t source, std::uint32_t id);
  void MakeReady(std::uint32_t source, Incoming& in);
  void DeliverInOrder(std::uint32_t source);

  ns3::Ptr<ns3::Node> node_;
  std::uint32_t self_;
  std::vector<ns3::Ipv4Address> addresses_;
  std::uint16_t port_;
  TransportConfig config_;
  std::uint32_t fragment_bytes_;
  LossLedger* ledger_;
  Deliver deliver_;
  ns3::Ptr<ns3::Socket> socket_;
  std::map<std::uint32_t, Peer> peers_;
  std::uint64_t bytes_sent_ = 0;
  Counters counters_;
  bool stopped_ = false;
};

}  // namespace gradwire
