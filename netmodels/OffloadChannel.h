// The wire between two OffloadNetDevices: full duplex, a fixed propagation delay. A packet is
// handed to the far end when its last frame has arrived, or, for a cut-through forwarding
// port, when its first frame has.
#pragma once

#include <cstdint>

#include <ns3/channel.h>
#include <ns3/nstime.h>
#include <ns3/packet.h>

namespace gradwire {

class OffloadNetDevice;

class OffloadChannel : public ns3::Channel {
 public:
  static ns3::TypeId GetTypeId();
  OffloadChannel() = default;

  void SetDelay(ns3::Time delay) { delay_ = delay; }
  ns3::Time delay() const { return delay_; }
  void Attach(ns3::Ptr<OffloadNetDevice> device);

  /// `source` started sending `packet` now; its first frame's last bit leaves after
  /// `first_frame`, its last frame's after `last_frame` (both before propagation).
  void TransmitStart(ns3::Ptr<ns3::Packet> packet, std::uint16_t protocol,
                     const OffloadNetDevice* source, ns3::Time first_frame,
                     ns3::Time last_frame);

  // ns3::Channel
  std::size_t GetNDevices() const override { return count_; }
  ns3::Ptr<ns3::NetDevice> GetDevice(std::size_t i) const override;

 protected:
  void DoDispose() override;

 private:
  ns3::Time delay_;
  ns3::Ptr<OffloadNetDevice> ends_[2];
  std::size_t count_ = 0;
};

}  // namespace gradwire
