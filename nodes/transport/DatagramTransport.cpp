#include "nodes/transport/DatagramTransport.h"

#include <algorithm>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

#include <ns3/inet-socket-address.h>
#include <ns3/packet.h>
#include <ns3/simulator.h>
#include <ns3/udp-socket-factory.h>

#include "nodes/transport/EndpointChannels.h"
#include "nodes/transport/FrameReader.h"
#include "nodes/transport/LossLedger.h"

namespace gradwire {

namespace {

/// Longest retransmit timeout after doubling: a minute of simulated time without an answer
/// means the peer is gone, not slow.
constexpr double kMaxRetransmitTimeout = 60.0;

std::uint32_t fragment_bytes_for(const TransportConfig& config, std::uint32_t mtu) {
  if (config.datagram_bytes != 0) {
    return std::max<std::uint32_t>(8, config.datagram_bytes / 8 * 8);
  }
  const std::uint32_t room = mtu > kUdpIpHeaderBytes + kDatagramHeaderBytes + 8
                                 ? mtu - kUdpIpHeaderBytes - kDatagramHeaderBytes
                                 : 8;
  return room / 8 * 8;  // whole elements of every size the codecs declare
}

}  // namespace

DatagramTransport::DatagramTransport(ns3::Ptr<ns3::Node> node, std::uint32_t self,
                                     std::vector<ns3::Ipv4Address> addresses, std::uint16_t port,
                                     const TransportConfig& config, std::uint32_t mtu,
                                     LossLedger* ledger, Deliver deliver)
    : node_(std::move(node)),
      self_(self),
      addresses_(std::move(addresses)),
      port_(port),
      config_(config),
      fragment_bytes_(fragment_bytes_for(config, mtu)),
      ledger_(ledger),
      deliver_(std::move(deliver)) {}

DatagramTransport::~DatagramTransport() { Stop(); }

void DatagramTransport::Start() { socket(); }

void DatagramTransport::Stop() {
  stopped_ = true;
  for (auto& [id, peer] : peers_) {
    for (auto& [m, out] : peer.sent) ns3::Simulator::Cancel(out.timer);
    for (auto& [m, in] : peer.arriving) ns3::Simulator::Cancel(in.timer);
  }
  peers_.clear();
  if (socket_) {
    socket_->SetRecvCallback(ns3::MakeNullCallback<void, ns3::Ptr<ns3::Socket>>());
    socket_->Close();
    socket_ = nullptr;
  }
}

ns3::Ptr<ns3::Socket> DatagramTransport::socket() {
  if (!socket_ && !stopped_) {
    socket_ = ns3::Socket::CreateSocket(node_, ns3::UdpSocketFactory::GetTypeId());
    if (socket_->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port_)) != 0) {
      throw std::runtime_error("host " + std::to_string(self_) + ": cannot bind UDP port " +
                               std::to_string(port_));
    }
    socket_->SetRecvCallback(ns3::MakeCallback(&DatagramTransport::HandleRead, this));
  }
  return socket_;
}

void DatagramTransport::Transmit(std::uint32_t destination,
                                 const std::vector<std::uint8_t>& datagram) {
  ns3::Ptr<ns3::Socket> s = socket();
  if (!s) return;
  ns3::Ptr<ns3::Packet> packet =
      ns3::Create<ns3::Packet>(datagram.data(), static_cast<std::uint32_t>(datagram.size()));
  // No congestion control, as UDP: what the queues cannot hold is dropped on the way and
  // shows up as loss (tolerant fragments) or NACKs (reliable ones).
  s->SendTo(packet, 0, ns3::InetSocketAddress(addresses_.at(destination), port_));
  bytes_sent_ += datagram.size();
  ++counters_.datagrams_sent;
}

void DatagramTransport::SendFragment(std::uint32_t destination, const Outgoing& out,
                                     std::uint32_t index) {
  DatagramHeader h = out.header;
  h.type = DatagramType::kData;
  h.index = index;
  const Fragment& f = out.plan.at(index);
  Transmit(destination, build_datagram(h, out.payload.data() + f.offset, f.size));
}

void DatagramTransport::SendControl(std::uint32_t destination, DatagramType type,
                                    const DatagramHeader& about,
                                    const std::vector<std::uint8_t>& body) {
  DatagramHeader h = about;
  h.type = type;
  h.source = self_;  // acknowledgements name their sender; message_id stays the sender's id
  Transmit(destination, build_datagram(h, body.data(), body.size()));
}

void DatagramTransport::Send(std::uint32_t destination, Message message) {
  if (destination == self_ || destination >= addresses_.size()) {
    throw std::logic_error("DatagramTransport::Send: bad destination " +
                           std::to_string(destination) + " from host " + std::to_string(self_));
  }
  Peer& peer = peers_[destination];
  const std::uint32_t id = peer.next_id++;
  Outgoing& out = peer.sent[id];
  DatagramHeader& h = out.header;
  h.source = self_;
  h.message_id = id;
  h.kind = message.kind;
  h.round = message.round;
  h.step = message.step;
  h.payload_length = message.payload.size();
  const bool lossy = message.loss.tolerant() && message.loss.from < h.payload_length;
  h.lossy_from = lossy ? message.loss.from : LossTolerance::kNone;
  h.element_bytes = lossy ? message.loss.element_bytes : 1;
  h.fragment_bytes = fragment_bytes_;
  out.payload = std::move(message.payload);
  out.plan = fragment_plan(h.payload_length, h.lossy_from, h.element_bytes, h.fragment_bytes);
  out.timeout_s = config_.retransmit_timeout_s;
  for (std::uint32_t i = 0; i < out.plan.size(); ++i) SendFragment(destination, out, i);
  // Two end markers: a receiver that misses both waits reassembly_timeout instead.
  for (std::uint32_t copy = 0; copy < 2; ++copy) {
    DatagramHeader end = h;
    end.index = copy;
    SendControl(destination, DatagramType::kEnd, end);
  }
  ArmRetransmit(destination, id);
}

void DatagramTransport::ArmRetransmit(std::uint32_t destination, std::uint32_t id) {
  Outgoing& out = peers_[destination].sent.at(id);
  ns3::Simulator::Cancel(out.timer);
  out.timer = ns3::Simulator::Schedule(ns3::Seconds(out.timeout_s),
                                       &DatagramTransport::OnRetransmitTimeout, this,
                                       destination, id);
}

void DatagramTransport::OnRetransmitTimeout(std::uint32_t destination, std::uint32_t id) {
  Peer& peer = peers_[destination];
  const auto it = peer.sent.find(id);
  if (it == peer.sent.end()) return;
  Outgoing& out = it->second;
  if (++out.tries > config_.max_retries) {
    ++counters_.abandoned;
    std::cerr << "gradwire: host " << self_ << " gave up message " << id << " (step "
              << out.header.step << ") to host " << destination << " after "
              << config_.max_retries << " unanswered tries\n";
    peer.sent.erase(it);
    return;
  }
  ++counters_.markers_resent;
  SendControl(destination, DatagramType::kEnd, out.header);
  out.timeout_s = std::min(kMaxRetransmitTimeout, 2 * out.timeout_s);
  ArmRetransmit(destination, id);
}

void DatagramTransport::HandleRead(ns3::Ptr<ns3::Socket> s) {
  ns3::Address from;
  std::vector<std::uint8_t> bytes;
  while (ns3::Ptr<ns3::Packet> packet = s->RecvFrom(from)) {
    const std::uint32_t n = packet->GetSize();
    bytes.resize(n);
    packet->CopyData(bytes.data(), n);
    try {
      const ParsedDatagram d = parse_datagram(bytes.data(), n, kMaxFramePayload);
      if (d.header.source >= addresses_.size() || d.header.source == self_) {
        throw FrameError("datagram from an unknown host");
      }
      OnDatagram(d);
    } catch (const FrameError&) {
      ++counters_.malformed;  // never trusted, never fatal: it is one lost datagram
    }
    if (stopped_) return;
  }
}

void DatagramTransport::OnDatagram(const ParsedDatagram& d) {
  const DatagramHeader& h = d.header;
  Peer& peer = peers_[h.source];
  switch (h.type) {
    case DatagramType::kData:
      OnData(peer, d);
      break;
    case DatagramType::kEnd:
      OnEnd(peer, h);
      break;
    case DatagramType::kAck: {
      // Acknowledgements name the acknowledging host as source and our message id.
      const auto it = peer.sent.find(h.message_id);
      if (it != peer.sent.end()) {
        ns3::Simulator::Cancel(it->second.timer);
        peer.sent.erase(it);
      }
      break;
    }
    case DatagramType::kNack:
      OnNack(peer, d);
      break;
  }
}

DatagramTransport::Incoming* DatagramTransport::Arriving(Peer& peer, const DatagramHeader& h) {
  if (h.message_id < peer.next_delivery) return nullptr;  // delivered already
  auto it = peer.arriving.find(h.message_id);
  if (it != peer.arriving.end()) {
    if (!it->second.header.same_message(h)) throw FrameError("datagram disagrees with its message");
    return &it->second;
  }
  std::vector<Fragment> plan =
      fragment_plan(h.payload_length, h.lossy_from, h.element_bytes, h.fragment_bytes);
  Incoming& in = peer.arriving[h.message_id];
  in.header = h;
  in.buffer.assign(h.payload_length, 0);  // lost loss-tolerant bytes read as zeros
  in.plan = std::move(plan);
  in.have.assign(in.plan.size(), false);
  in.reliable_missing = static_cast<std::size_t>(
      std::count_if(in.plan.begin(), in.plan.end(), [](const Fragment& f) { return f.reliable; }));
  return &in;
}

void DatagramTransport::OnData(Peer& peer, const ParsedDatagram& d) {
  const DatagramHeader& h = d.header;
  Incoming* in = Arriving(peer, h);
  if (in == nullptr || in->ready) {
    ++counters_.late;
    return;
  }
  if (h.index >= in->plan.size() || d.body_size != in->plan[h.index].size) {
    throw FrameError("fragment index or size outside the message's plan");
  }
  if (in->have[h.index]) return;  // a duplicate after a NACK crossed the original
  const Fragment& f = in->plan[h.index];
  if (f.size != 0) std::memcpy(in->buffer.data() + f.offset, d.body, f.size);
  in->have[h.index] = true;
  ++in->received;
  if (f.reliable) --in->reliable_missing;
  ns3::Simulator::Cancel(in->timer);
  if (in->received == in->plan.size()) {
    MakeReady(h.source, *in);
    DeliverInOrder(h.source);
    return;
  }
  in->timer = ns3::Simulator::Schedule(ns3::Seconds(config_.reassembly_timeout_s),
                                       &DatagramTransport::Evaluate, this, h.source,
                                       h.message_id);
}

void DatagramTransport::OnEnd(Peer& peer, const DatagramHeader& h) {
  if (h.message_id < peer.next_delivery) {
    SendControl(h.source, DatagramType::kAck, h);  // our acknowledgement was lost
    return;
  }
  Incoming* in = Arriving(peer, h);
  if (in->ready) {
    SendControl(h.source, DatagramType::kAck, h);
    return;
  }
  ns3::Simulator::Cancel(in->timer);
  if (config_.reorder_window_s > 0) {
    in->timer = ns3::Simulator::Schedule(ns3::Seconds(config_.reorder_window_s),
                                         &DatagramTransport::Evaluate, this, h.source,
                                         h.message_id);
  } else {
    Evaluate(h.source, h.message_id);
  }
}

void DatagramTransport::OnNack(Peer& peer, const ParsedDatagram& d) {
  const auto it = peer.sent.find(d.header.message_id);
  if (it == peer.sent.end()) return;  // acknowledged meanwhile
  Outgoing& out = it->second;
  const auto ranges =
      decode_ranges(d.body, d.body_size, static_cast<std::uint32_t>(out.plan.size()));
  for (const auto& [first, count] : ranges) {
    for (std::uint32_t i = first; i < first + count; ++i) {
      SendFragment(d.header.source, out, i);
      ++counters_.fragments_resent;
    }
  }
  SendControl(d.header.source, DatagramType::kEnd, out.header);
  ArmRetransmit(d.header.source, d.header.message_id);
}

void DatagramTransport::Evaluate(std::uint32_t source, std::uint32_t id) {
  if (stopped_) return;
  Peer& peer = peers_[source];
  const auto it = peer.arriving.find(id);
  if (it == peer.arriving.end() || it->second.ready) return;
  Incoming& in = it->second;
  if (in.reliable_missing > 0) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;
    for (std::uint32_t i = 0; i < in.plan.size(); ++i) {
      if (!in.plan[i].reliable || in.have[i]) continue;
      if (!ranges.empty() && ranges.back().first + ranges.back().second == i) {
        ++ranges.back().second;
      } else {
        ranges.emplace_back(i, 1);
      }
    }
    // The sender answers with the fragments and a new end marker, which evaluates again.
    SendControl(source, DatagramType::kNack, in.header, encode_ranges(ranges, fragment_bytes_));
    return;
  }
  MakeReady(source, in);
  DeliverInOrder(source);
}

void DatagramTransport::MakeReady(std::uint32_t source, Incoming& in) {
  ns3::Simulator::Cancel(in.timer);
  in.ready = true;
  const DatagramHeader& h = in.header;
  if (ledger_ != nullptr && h.lossy_from < h.payload_length) {
    std::uint64_t lost = 0;
    for (std::size_t i = 0; i < in.plan.size(); ++i) {
      if (!in.have[i]) lost += in.plan[i].size;
    }
    // Buckets' payloads carry their channel in the step's top bits: count them in their step.
    ledger_->add(EndpointChannels::training_step(h.step), h.payload_length - h.lossy_from, lost);
  }
  SendControl(source, DatagramType::kAck, h);
}

void DatagramTransport::DeliverInOrder(std::uint32_t source) {
  Peer& peer = peers_[source];
  for (auto it = peer.arriving.find(peer.next_delivery);
       it != peer.arriving.end() && it->second.ready;
       it = peer.arriving.find(peer.next_delivery)) {
    Message m;
    m.source = source;
    m.kind = it->second.header.kind;
    m.round = it->second.header.round;
    m.step = it->second.header.step;
    m.payload = std::move(it->second.buffer);
    peer.arriving.erase(it);
    ++peer.next_delivery;
    if (deliver_) deliver_(std::move(m));
    if (stopped_) return;
  }
}

}  // namespace gradwire
