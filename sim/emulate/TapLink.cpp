#include "sim/emulate/TapLink.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <ns3/ipv4-header.h>
#include <ns3/ipv4-queue-disc-item.h>
#include <ns3/simulator.h>
#include <ns3/traffic-control-layer.h>

#include "sim/emulate/IpCommand.h"

namespace gradwire {

namespace {

constexpr std::uint16_t kIpv4 = 0x0800;
constexpr std::uint16_t kArp = 0x0806;
constexpr std::size_t kEthernetHeader = 14;
// Frames written to a TAP that runs without ARP still need a source address: a fixed, locally
// administered one stands for "the network".
const std::uint8_t kNetworkMac[6] = {0x02, 0x67, 0x77, 0x00, 0x00, 0x01};

}  // namespace

bool TapLink::uses_arp(const ns3::Ptr<ns3::NetDevice>& device) {
  return device->NeedsArp() && ns3::Mac48Address::IsMatchingType(device->GetAddress());
}

TapLink::TapLink(ns3::Ptr<ns3::NetDevice> device, int tap_fd, ns3::Mac48Address tap_mac)
    : device_(device), node_(device->GetNode()), fd_(tap_fd), tap_mac_(tap_mac),
      arp_(uses_arp(device)) {
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    throw EmulationError(std::string("pipe: ") + std::strerror(errno));
  }
  // Not promiscuous: the device hands over what is addressed to this host (and broadcasts),
  // exactly what a real NIC gives its kernel.
  node_->RegisterProtocolHandler(ns3::MakeCallback(&TapLink::FromDevice, this), 0, device_,
                                 false);
}

TapLink::~TapLink() {
  Stop();
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

void TapLink::Start() { reader_ = std::thread(&TapLink::ReadLoop, this); }

void TapLink::Stop() {
  if (!reader_.joinable()) return;
  const char byte = 's';
  while (::write(stop_pipe_[1], &byte, 1) < 0 && errno == EINTR) {
  }
  reader_.join();
}

void TapLink::ReadLoop() {
  const std::uint32_t context = node_->GetId();
  std::vector<std::uint8_t> buffer(65536);
  pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const ssize_t n = ::read(fd_, buffer.data(), buffer.size());
    if (n <= 0) {
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      return;
    }
    auto frame = std::make_shared<std::vector<std::uint8_t>>(buffer.begin(), buffer.begin() + n);
    // Thread-safe in the real-time simulator: the event runs at the wall clock's "now".
    ns3::Simulator::ScheduleWithContext(context, ns3::Time(0),
                                        [this, frame] { FromTap(*frame); });
  }
}

void TapLink::FromTap(const std::vector<std::uint8_t>& frame) {
  if (frame.size() <= kEthernetHeader) {
    ++counters_.dropped_frames;
    return;
  }
  const std::uint16_t type = static_cast<std::uint16_t>(frame[12] << 8 | frame[13]);
  ns3::Mac48Address destination;
  destination.CopyFrom(frame.data());
  auto packet = ns3::Create<ns3::Packet>(frame.data() + kEthernetHeader,
                                         static_cast<std::uint32_t>(frame.size() - kEthernetHeader));
  if (type == kArp && arp_) {
    device_->Send(packet, destination, kArp);
    return;
  }
  if (type != kIpv4 || packet->GetSize() < 20) {
    ++counters_.dropped_frames;
    return;
  }
  ns3::Ipv4Header header;
  header.EnableChecksum();  // re-serialised with a valid checksum (ns-3 writes 0 otherwise)
  packet->RemoveHeader(header);
  if (packet->GetSize() > header.GetPayloadSize()) {
    packet->RemoveAtEnd(packet->GetSize() - header.GetPayloadSize());
  }
  ++counters_.sent_packets;
  counters_.sent_bytes += packet->GetSize() + header.GetSerializedSize();
  const ns3::Address next_hop = arp_ ? ns3::Address(destination) : device_->GetBroadcast();
  auto item = ns3::Create<ns3::Ipv4QueueDiscItem>(packet, next_hop, kIpv4, header);
  if (auto tc = node_->GetObject<ns3::TrafficControlLayer>()) {
    tc->Send(device_, item);
  } else {
    item->AddHeader();
    device_->Send(item->GetPacket(), next_hop, kIpv4);
  }
}

void TapLink::FromDevice(ns3::Ptr<ns3::NetDevice>, ns3::Ptr<const ns3::Packet> packet,
                         std::uint16_t protocol, const ns3::Address& from, const ns3::Address&,
                         ns3::NetDevice::PacketType) {
  if (protocol != kIpv4 && !(arp_ && protocol == kArp)) return;
  std::vector<std::uint8_t> frame(kEthernetHeader + packet->GetSize());
  tap_mac_.CopyTo(frame.data());
  if (arp_ && ns3::Mac48Address::IsMatchingType(from)) {
    ns3::Mac48Address::ConvertFrom(from).CopyTo(frame.data() + 6);
  } else {
    std::memcpy(frame.data() + 6, kNetworkMac, 6);
  }
  frame[12] = static_cast<std::uint8_t>(protocol >> 8);
  frame[13] = static_cast<std::uint8_t>(protocol & 0xff);
  packet->CopyData(frame.data() + kEthernetHeader, packet->GetSize());
  if (protocol == kIpv4) {
    ++counters_.received_packets;
    counters_.received_bytes += packet->GetSize();
  }
  // A full TAP queue drops the frame, as a NIC's full ring would.
  while (::write(fd_, frame.data(), frame.size()) < 0 && errno == EINTR) {
  }
}

}  // namespace gradwire
