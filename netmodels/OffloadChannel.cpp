#include "netmodels/OffloadChannel.h"

#include <ns3/log.h>
#include <ns3/node.h>
#include <ns3/simulator.h>

#include "netmodels/OffloadNetDevice.h"

namespace gradwire {

NS_LOG_COMPONENT_DEFINE("OffloadChannel");

NS_OBJECT_ENSURE_REGISTERED(OffloadChannel);

ns3::TypeId OffloadChannel::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::OffloadChannel")
                               .SetParent<ns3::Channel>()
                               .SetGroupName("gradwire")
                               .AddConstructor<OffloadChannel>();
  return tid;
}

void OffloadChannel::Attach(ns3::Ptr<OffloadNetDevice> device) {
  NS_LOG_FUNCTION(this << device);
  NS_ABORT_MSG_IF(count_ >= 2, "an OffloadChannel joins two devices");
  ends_[count_++] = device;
}

ns3::Ptr<ns3::NetDevice> OffloadChannel::GetDevice(std::size_t i) const {
  return i < count_ ? ends_[i] : nullptr;
}

void OffloadChannel::TransmitStart(ns3::Ptr<ns3::Packet> packet, std::uint16_t protocol,
                                   const OffloadNetDevice* source, ns3::Time first_frame,
                                   ns3::Time last_frame) {
  if (count_ < 2) return;
  const ns3::Ptr<OffloadNetDevice> to = ns3::PeekPointer(ends_[0]) == source ? ends_[1] : ends_[0];
  const ns3::Time at = (to->cut_through() ? first_frame : last_frame) + delay_;
  NS_LOG_LOGIC("packet " << packet->GetUid() << " reaches node " << to->GetNode()->GetId()
                         << " in " << at.As(ns3::Time::US)
                         << (to->cut_through() ? " (cut-through, first frame)" : ""));
  ns3::Simulator::ScheduleWithContext(to->GetNode()->GetId(), at, &OffloadNetDevice::Receive,
                                      to, packet->Copy(), protocol);
}

void OffloadChannel::DoDispose() {
  ends_[0] = nullptr;
  ends_[1] = nullptr;
  count_ = 0;
  ns3::Channel::DoDispose();
}

}  // namespace gradwire
