#include "netmodels/HostTcpSocketFactory.h"

#include <ns3/log.h>
#include <ns3/node.h>
#include <ns3/object-factory.h>
#include <ns3/rtt-estimator.h>
#include <ns3/tcp-congestion-ops.h>
#include <ns3/tcp-l4-protocol.h>
#include <ns3/tcp-recovery-ops.h>
#include <ns3/tcp-socket-factory.h>
#include <ns3/type-id.h>
#include <ns3/uinteger.h>

#include "netmodels/Network.h"
#include "netmodels/OffloadTcpSocket.h"
#include "netmodels/SmallQueuesTcpSocket.h"

namespace gradwire {

NS_LOG_COMPONENT_DEFINE("HostTcpSocketFactory");

ns3::TypeId HostTcpSocketFactory::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::HostTcpSocketFactory")
                               .SetParent<ns3::SocketFactory>()
                               .SetGroupName("Internet");
  return tid;
}

namespace {

template <typename T>
ns3::Ptr<T> create_from_attribute(const ns3::TcpL4Protocol& tcp, const char* attribute) {
  ns3::TypeIdValue type;
  tcp.GetAttribute(attribute, type);
  ns3::ObjectFactory factory;
  factory.SetTypeId(type.Get());
  return factory.Create<T>();
}

}  // namespace

ns3::Ptr<ns3::Socket> HostTcpSocketFactory::CreateSocket() {
  NS_LOG_FUNCTION(this << max_segment_frames_);
  const ns3::Ptr<ns3::Node> node = GetObject<ns3::Node>();
  const ns3::Ptr<ns3::TcpL4Protocol> tcp = node->GetObject<ns3::TcpL4Protocol>();
  ns3::Ptr<SmallQueuesTcpSocket> socket;
  if (max_segment_frames_ > 1) {
    auto offload = ns3::CreateObject<OffloadTcpSocket>();
    offload->SetAttribute("MaxSegmentFrames", ns3::UintegerValue(max_segment_frames_));
    socket = offload;
  } else {
    socket = ns3::CreateObject<SmallQueuesTcpSocket>();
  }
  socket->SetNode(node);
  socket->SetTcp(tcp);
  socket->SetRtt(create_from_attribute<ns3::RttEstimator>(*tcp, "RttEstimatorType"));
  // TcpL4Protocol's "SocketType" is its congestion control's type.
  socket->SetCongestionControlAlgorithm(
      create_from_attribute<ns3::TcpCongestionOps>(*tcp, "SocketType"));
  socket->SetRecoveryAlgorithm(create_from_attribute<ns3::TcpRecoveryOps>(*tcp, "RecoveryType"));
  // Registered with the protocol as its own sockets are, so that it disposes of it.
  tcp->AddSocket(socket);
  return socket;
}

ns3::Ptr<ns3::Socket> HostTcpSocketFactory::CreateTcpSocket(ns3::Ptr<ns3::Node> node) {
  if (const auto factory = node->GetObject<HostTcpSocketFactory>()) {
    return factory->CreateSocket();
  }
  return ns3::Socket::CreateSocket(node, ns3::TcpSocketFactory::GetTypeId());
}

void HostTcpSocketFactory::FollowHostQueues(const Network& network) {
  for (std::size_t i = 0; i < network.host_count(); ++i) {
    const ns3::Ptr<ns3::Node> node = network.host(i);
    bool followed = false;
    for (std::uint32_t d = 0; d < node->GetNDevices(); ++d) {
      followed = SmallQueuesTcpSocket::FollowDevice(node->GetDevice(d)) || followed;
    }
    if (followed && !node->GetObject<HostTcpSocketFactory>()) {
      node->AggregateObject(ns3::CreateObject<HostTcpSocketFactory>(1u));
    }
  }
}

}  // namespace gradwire
