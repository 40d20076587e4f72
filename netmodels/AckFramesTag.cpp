#include "netmodels/AckFramesTag.h"

namespace gradwire {

ns3::TypeId AckFramesTag::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::AckFramesTag")
                               .SetParent<ns3::Tag>()
                               .SetGroupName("Network")
                               .AddConstructor<AckFramesTag>();
  return tid;
}

ns3::TypeId AckFramesTag::GetInstanceTypeId() const { return GetTypeId(); }

}  // namespace gradwire
