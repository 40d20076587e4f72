// A header of no bytes that gives a packet of real payload bytes room for its headers.
//
// ns-3 writes a header in front of a packet's bytes in place only when the buffer has room
// before them and no other packet sharing the buffer has written there (its "dirty" area
// starts at the bytes). A packet made from bytes has neither, and TCP's send buffer keeps a
// copy of every segment for retransmission, so each TCP and IP header added to a data segment
// copied the whole segment: two 64 KB copies per offloaded segment, a tenth of a bulk step's
// wall time. A packet made with spare bytes in front, removed again, has the room; adding this
// empty header while the packet is not yet shared marks the room as the buffer's clean front,
// so TCP's and IP's headers are then written into it without a copy.
#pragma once

#include <cstdint>

#include <ns3/header.h>
#include <ns3/packet.h>

namespace gradwire {

class HeadroomMark : public ns3::Header {
 public:
  /// Spare bytes in front of a packet's payload: TCP (with options) and IPv4 headers fit.
  static constexpr std::uint32_t kBytes = 128;

  /// A packet carrying `size` bytes from `data`, with room for headers in front; the
  /// kBytes before `data` must be readable (their values do not matter).
  static ns3::Ptr<ns3::Packet> MakePacket(const std::uint8_t* data, std::uint32_t size);

  static ns3::TypeId GetTypeId();
  ns3::TypeId GetInstanceTypeId() const override;
  std::uint32_t GetSerializedSize() const override { return 0; }
  void Serialize(ns3::Buffer::Iterator) const override {}
  std::uint32_t Deserialize(ns3::Buffer::Iterator) override { return 0; }
  void Print(std::ostream&) const override {}
};

}  // namespace gradwire
