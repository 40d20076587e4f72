#include "sim/service/LocalEventQueue.h"

#include <ns3/nstime.h>
#include <ns3/object-factory.h>
#include <ns3/simulator.h>

namespace gradwire {

LocalEventQueue* LocalEventQueue::current_ = nullptr;

ns3::TypeId LocalEventQueue::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::LocalEventQueue")
                               .SetParent<ns3::MapScheduler>()
                               .SetGroupName("gradwire")
                               .AddConstructor<LocalEventQueue>();
  return tid;
}

LocalEventQueue::LocalEventQueue() { current_ = this; }

LocalEventQueue::~LocalEventQueue() {
  if (current_ == this) current_ = nullptr;
}

void LocalEventQueue::install() {
  ns3::ObjectFactory factory;
  factory.SetTypeId(GetTypeId());
  ns3::Simulator::SetScheduler(factory);
}

std::optional<std::int64_t> LocalEventQueue::next_event_ns() {
  if (!current_ || current_->IsEmpty()) return std::nullopt;
  const std::uint64_t ts = current_->PeekNext().key.m_ts;
  return ns3::TimeStep(ts).GetNanoSeconds();
}

}  // namespace gradwire
