#include "nodes/transport/Messenger.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <ns3/inet-socket-address.h>
#include <ns3/packet.h>
#include <ns3/uinteger.h>
#include <ns3/simulator.h>

#include "netmodels/Network.h"
#include "netmodels/HostTcpSocketFactory.h"
#include "nodes/transport/DatagramTransport.h"
#include "nodes/transport/HeadroomMark.h"

namespace gradwire {

namespace {
// About what one Send() call hands TCP: large enough to keep the call count low, small enough
// not to copy huge buffers at once. Rounded down to whole segments (Pump), because TCP sends
// what it has at once: a chunk that ended inside a segment would put a short segment on the
// wire before the next chunk arrived, and a segment spanning two chunks costs ns-3 a copy.
constexpr std::uint32_t kMaxChunk = 1u << 16;
}  // namespace

ns3::TypeId Messenger::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::Messenger")
                               .SetParent<ns3::Application>()
                               .SetGroupName("gradwire")
                               .AddConstructor<Messenger>();
  return tid;
}

std::vector<ns3::Ptr<Messenger>> Messenger::InstallOnHosts(const Network& network,
                                                           std::uint16_t port, double start_s) {
  std::vector<ns3::Ipv4Address> addresses;
  for (std::size_t h = 0; h < network.host_count(); ++h) addresses.push_back(network.address(h));
  std::vector<ns3::Ptr<Messenger>> messengers;
  for (std::size_t h = 0; h < network.host_count(); ++h) {
    auto m = ns3::CreateObject<Messenger>();
    m->Configure(static_cast<std::uint32_t>(h), addresses, port);
    m->SetStartTime(ns3::Seconds(start_s));
    network.host(h)->AddApplication(m);
    messengers.push_back(m);
  }
  return messengers;
}

Messenger::Messenger() = default;
Messenger::~Messenger() = default;

void Messenger::Configure(std::uint32_t self, std::vector<ns3::Ipv4Address> addresses,
                          std::uint16_t port) {
  self_ = self;
  addresses_ = std::move(addresses);
  port_ = port;
}

void Messenger::UseDatagrams(const TransportConfig& config, std::uint32_t mtu,
                             LossLedger* ledger) {
  // The node is known (the application is installed); the socket opens in StartApplication.
  datagrams_ = std::make_unique<DatagramTransport>(
      GetNode(), self_, addresses_, port_, config, mtu, ledger,
      [this](Message&& m) { Deliver(std::move(m)); });
}

std::uint64_t Messenger::bytes_sent() const {
  return bytes_sent_ + (datagrams_ ? datagrams_->bytes_sent() : 0);
}

void Messenger::Deliver(Message&& m) {
  bytes_received_ += kFrameHeaderBytes + m.payload.size();
  if (handler_) handler_(std::move(m));
}

void Messenger::SetHandler(Handler handler) { handler_ = std::move(handler); }

void Messenger::StartApplication() {
  if (datagrams_) {
    datagrams_->Start();
    return;
  }
  listener_ = HostTcpSocketFactory::CreateTcpSocket(GetNode());
  listener_->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), port_));
  listener_->Listen();
  listener_->SetAcceptCallback(
      ns3::MakeNullCallback<bool, ns3::Ptr<ns3::Socket>, const ns3::Address&>(),
      ns3::MakeCallback(&Messenger::HandleAccept, this));
}

void Messenger::StopApplication() {
  if (datagrams_) datagrams_->Stop();
  if (listener_) listener_->Close();
  for (auto& [dst, c] : outgoing_) {
    if (c.socket) c.socket->Close();
  }
}

void Messenger::DoDispose() {
  for (auto& [dst, c] : outgoing_) {
    if (c.socket) {
      c.socket->SetSendCallback(ns3::MakeNullCallback<void, ns3::Ptr<ns3::Socket>, std::uint32_t>());
      c.socket->SetConnectCallback(ns3::MakeNullCallback<void, ns3::Ptr<ns3::Socket>>(),
                                   ns3::MakeNullCallback<void, ns3::Ptr<ns3::Socket>>());
    }
  }
  for (auto& [raw, entry] : incoming_) {
    entry.first->SetRecvCallback(ns3::MakeNullCallback<void, ns3::Ptr<ns3::Socket>>());
  }
  outgoing_.clear();
  incoming_.clear();
  datagrams_.reset();
  listener_ = nullptr;
  ns3::Application::DoDispose();
}

Messenger::Connection& Messenger::ConnectionTo(std::uint32_t destination) {
  auto it = outgoing_.find(destination);
  if (it != outgoing_.end()) return it->second;
  Connection& c = outgoing_[destination];
  c.socket = HostTcpSocketFactory::CreateTcpSocket(GetNode());
  c.socket->Bind();
  ns3::UintegerValue segment;
  c.socket->GetAttribute("SegmentSize", segment);
  const auto segment_bytes = static_cast<std::uint32_t>(std::max<std::uint64_t>(1, segment.Get()));
  // An offloading socket sends super-segments of up to MaxSegmentFrames segments: chunks of
  // whole super-segments let it send each chunk as one without joining two.
  ns3::UintegerValue super_segment(1);
  c.socket->GetAttributeFailSafe("MaxSegmentFrames", super_segment);
  const std::uint64_t frames = std::max<std::uint64_t>(1, super_segment.Get());
  const auto unit =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(kMaxChunk, segment_bytes * frames));
  c.chunk = std::max(segment_bytes, kMaxChunk / unit * unit);
  c.socket->SetConnectCallback(
      ns3::Callback<void, ns3::Ptr<ns3::Socket>>(
          [this, destination](ns3::Ptr<ns3::Socket>) {
            outgoing_[destination].connected = true;
            Pump(destination);
          }),
      ns3::Callback<void, ns3::Ptr<ns3::Socket>>([this, destination](ns3::Ptr<ns3::Socket>) {
        throw std::runtime_error("host " + std::to_string(self_) + " could not connect to host " +
                                 std::to_string(destination));
      }));
  c.socket->SetSendCallback(ns3::Callback<void, ns3::Ptr<ns3::Socket>, std::uint32_t>(
      [this, destination](ns3::Ptr<ns3::Socket>, std::uint32_t) { Pump(destination); }));
  c.socket->Connect(ns3::InetSocketAddress(addresses_.at(destination), port_));
  return c;
}

void Messenger::Send(std::uint32_t destination, Message message) {
  if (destination == self_ || destination >= addresses_.size()) {
    throw std::logic_error("Messenger::Send: bad destination " + std::to_string(destination) +
                           " from host " + std::to_string(self_));
  }
  message.source = self_;
  if (datagrams_) {
    datagrams_->Send(destination, std::move(message));
    return;
  }
  Connection& c = ConnectionTo(destination);
  c.frames.emplace_back();
  write_frame_header(message, c.frames.back().header);
  c.frames.back().payload = std::move(message.payload);
  Pump(destination);
}

void Messenger::Pump(std::uint32_t destination) {
  Connection& c = outgoing_.at(destination);
  if (!c.connected) return;
  while (!c.frames.empty()) {
    const Connection::Frame& frame = c.frames.front();
    const std::uint32_t room = c.socket->GetTxAvailable();
    if (room == 0) return;  // the send callback resumes us when TCP frees buffer space
    const std::size_t left = frame.size() - c.offset;
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>({left, room, c.chunk}));
    ns3::Ptr<ns3::Packet> packet;
    const bool past_header = c.offset >= kFrameHeaderBytes;
    const std::size_t at = past_header ? c.offset - kFrameHeaderBytes : 0;  // in the payload
    if (past_header && at >= HeadroomMark::kBytes) {
      packet = HeadroomMark::MakePacket(frame.payload.data() + at, n);
    } else {
      // The frame's start: the header goes with the payload's first bytes, in the same chunks
      // as one contiguous frame would, so TCP forms the same segments at the same instants.
      first_chunk_.resize(HeadroomMark::kBytes + n);
      std::uint8_t* out = first_chunk_.data() + HeadroomMark::kBytes;
      const std::size_t from_header =
          past_header ? 0 : std::min<std::size_t>(n, kFrameHeaderBytes - c.offset);
      if (from_header > 0) std::memcpy(out, frame.header + c.offset, from_header);
      const std::size_t payload_at = past_header ? at : 0;
      if (n > from_header) {
        std::memcpy(out + from_header, frame.payload.data() + payload_at, n - from_header);
      }
      packet = HeadroomMark::MakePacket(out, n);
    }
    const int sent = c.socket->Send(packet);
    if (sent <= 0) return;
    c.offset += static_cast<std::size_t>(sent);
    bytes_sent_ += static_cast<std::uint64_t>(sent);
    if (c.offset == frame.size()) {
      c.frames.pop_front();
      c.offset = 0;
    }
  }
}

bool Messenger::idle() const {
  for (const auto& [dst, c] : outgoing_) {
    if (!c.frames.empty()) return false;
  }
  return true;
}

void Messenger::HandleAccept(ns3::Ptr<ns3::Socket> socket, const ns3::Address&) {
  socket->SetRecvCallback(ns3::MakeCallback(&Messenger::HandleRead, this));
  incoming_[ns3::PeekPointer(socket)] = {socket, std::make_unique<FrameReader>()};
}

void Messenger::HandleRead(ns3::Ptr<ns3::Socket> socket) {
  auto it = incoming_.find(ns3::PeekPointer(socket));
  if (it == incoming_.end()) return;
  FrameReader& reader = *it->second.second;
  const auto deliver = [this](Message&& m) { Deliver(std::move(m)); };
  while (ns3::Ptr<ns3::Packet> packet = socket->Recv()) {
    const std::uint32_t n = packet->GetSize();
    if (n == 0) break;
    // Bytes go from the packet straight into the message they belong to.
    reader.feed(
        n,
        [&packet](std::uint8_t* out, std::size_t k) {
          packet->CopyData(out, static_cast<std::uint32_t>(k));
          packet->RemoveAtStart(static_cast<std::uint32_t>(k));
        },
        deliver);
  }
}

}  // namespace gradwire
