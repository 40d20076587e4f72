// Marks a pure TCP acknowledgement that stands for several on the wire. A receiver with GRO
// acknowledges a super-segment once, where per-frame TCP sends an ACK for every second frame;
// on a full-duplex link those ACKs share the wire with the other direction's data (a ring's
// hosts send and acknowledge at once), so the offloading link serialises the acknowledgement
// as the ACK frames it stands for.
#pragma once

#include <cstdint>
#include <ostream>

#include <ns3/tag.h>

namespace gradwire {

class AckFramesTag : public ns3::Tag {
 public:
  static ns3::TypeId GetTypeId();
  ns3::TypeId GetInstanceTypeId() const override;

  AckFramesTag() = default;
  explicit AckFramesTag(std::uint32_t frames) : frames_(frames) {}
  /// ACK frames per-frame TCP would have sent for what this acknowledgement covers.
  std::uint32_t frames() const { return frames_; }

  std::uint32_t GetSerializedSize() const override { return 4; }
  void Serialize(ns3::TagBuffer buffer) const override { buffer.WriteU32(frames_); }
  void Deserialize(ns3::TagBuffer buffer) override { frames_ = buffer.ReadU32(); }
  void Print(std::ostream& os) const override { os << "ack frames=" << frames_; }

 private:
  std::uint32_t frames_ = 1;
};

}  // namespace gradwire
