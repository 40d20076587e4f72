#include "netmodels/TcpDefaults.h"

#include <ns3/config.h>
#include <ns3/nstime.h>
#include <ns3/uinteger.h>

namespace gradwire {

void apply_tcp_defaults(std::uint32_t mtu, std::uint32_t buffer_bytes) {
  ns3::Config::SetDefault("ns3::TcpSocket::SegmentSize",
                          ns3::UintegerValue(mtu - kTcpIpHeaderBytes));
  ns3::Config::SetDefault("ns3::TcpSocket::SndBufSize", ns3::UintegerValue(buffer_bytes));
  ns3::Config::SetDefault("ns3::TcpSocket::RcvBufSize", ns3::UintegerValue(buffer_bytes));
  // Linux's timers, not ns-3's: minimum RTO 200 ms (TCP_RTO_MIN; ns-3 defaults to RFC 6298's
  // 1 s) and a 40 ms delayed-ACK timeout (TCP_ATO_MIN; ns-3: 200 ms). Both must change
  // together: with a 200 ms RTO and a 200 ms delayed ACK, a lone segment's ACK arrives just
  // as its RTO fires and every such exchange retransmits spuriously.
  ns3::Config::SetDefault("ns3::TcpSocketBase::MinRto", ns3::TimeValue(ns3::MilliSeconds(200)));
  ns3::Config::SetDefault("ns3::TcpSocket::DelAckTimeout", ns3::TimeValue(ns3::MilliSeconds(40)));
}

}  // namespace gradwire
