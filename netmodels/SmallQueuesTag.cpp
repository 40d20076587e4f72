#include "netmodels/SmallQueuesTag.h"

namespace gradwire {

ns3::TypeId SmallQueuesTag::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::SmallQueuesTag")
                               .SetParent<ns3::Tag>()
                               .SetGroupName("Network")
                               .AddConstructor<SmallQueuesTag>();
  return tid;
}

ns3::TypeId SmallQueuesTag::GetInstanceTypeId() const { return GetTypeId(); }

}  // namespace gradwire
