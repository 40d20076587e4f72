#include "nodes/transport/HeadroomMark.h"

namespace gradwire {

ns3::TypeId HeadroomMark::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::HeadroomMark")
                               .SetParent<ns3::Header>()
                               .SetGroupName("gradwire")
                               .AddConstructor<HeadroomMark>();
  return tid;
}

ns3::TypeId HeadroomMark::GetInstanceTypeId() const { return GetTypeId(); }

ns3::Ptr<ns3::Packet> HeadroomMark::MakePacket(const std::uint8_t* data, std::uint32_t size) {
  ns3::Ptr<ns3::Packet> packet = ns3::Create<ns3::Packet>(data - kBytes, size + kBytes);
  packet->RemoveAtStart(kBytes);
  packet->AddHeader(HeadroomMark());  // not shared yet: the clean front moves to the payload
  return packet;
}

}  // namespace gradwire
