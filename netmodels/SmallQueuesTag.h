// Marks a TCP segment a SmallQueuesTcpSocket sent with a number of its own, so that the host's
// device can credit it back to its socket when it leaves the host. Packet uids cannot serve:
// a socket cuts its segments from the application's writes, and every segment cut from one
// write keeps that write's uid.
#pragma once

#include <cstdint>
#include <ostream>

#include <ns3/tag.h>

namespace gradwire {

class SmallQueuesTag : public ns3::Tag {
 public:
  static ns3::TypeId GetTypeId();
  ns3::TypeId GetInstanceTypeId() const override;

  SmallQueuesTag() = default;
  explicit SmallQueuesTag(std::uint64_t serial) : serial_(serial) {}
  /// The segment's number, unique within the process.
  std::uint64_t serial() const { return serial_; }

  std::uint32_t GetSerializedSize() const override { return 8; }
  void Serialize(ns3::TagBuffer buffer) const override { buffer.WriteU64(serial_); }
  void Deserialize(ns3::TagBuffer buffer) override { serial_ = buffer.ReadU64(); }
  void Print(std::ostream& os) const override { os << "small queues serial=" << serial_; }

 private:
  std::uint64_t serial_ = 0;
};

}  // namespace gradwire
