#include "netmodels/TcpDefaults.h"

#include <ns3/config.h>
#include <ns3/uinteger.h>

namespace gradwire {

void apply_tcp_defaults(std::uint32_t mtu, std::uint32_t buffer_bytes) {
  ns3::Config::SetDefault("ns3::TcpSocket::SegmentSize",
                          ns3::UintegerValue(mtu - kTcpIpHeaderBytes));
  ns3::Config::SetDefault("ns3::TcpSocket::SndBufSize", ns3::UintegerValue(buffer_bytes));
  ns3::Config::SetDefault("ns3::TcpSocket::RcvBufSize", ns3::UintegerValue(buffer_bytes));
}

}  // namespace gradwire
