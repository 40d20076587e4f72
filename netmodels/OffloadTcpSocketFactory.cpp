#include "netmodels/OffloadTcpSocketFactory.h"

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

#include "netmodels/OffloadTcpSocket.h"

namespace gradwire {

NS_LOG_COMPONENT_DEFINE("OffloadTcpSocketFactory");

ns3::TypeId OffloadTcpSocketFactory::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::OffloadTcpSocketFactory")
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

ns3::Ptr<ns3::Socket> OffloadTcpSocketFactory::CreateSocket() {
  NS_LOG_FUNCTION(this << max_segment_frames_);
  const ns3::Ptr<ns3::Node> node = GetObject<ns3::Node>();
  const ns3::Ptr<ns3::TcpL4Protocol> tcp = node->GetObject<ns3::TcpL4Protocol>();
  auto socket = ns3::CreateObject<OffloadTcpSocket>();
  socket->SetAttribute("MaxSegmentFrames", ns3::UintegerValue(max_segment_frames_));
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

ns3::Ptr<ns3::Socket> OffloadTcpSocketFactory::CreateTcpSocket(ns3::Ptr<ns3::Node> node) {
  if (const auto offload = node->GetObject<OffloadTcpSocketFactory>()) {
    return offload->CreateSocket();
  }
  return ns3::Socket::CreateSocket(node, ns3::TcpSocketFactory::GetTypeId());
}

}  // namespace gradwire
