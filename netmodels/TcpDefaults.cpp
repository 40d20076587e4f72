#include "netmodels/TcpDefaults.h"

#include <algorithm>

#include <ns3/config.h>
#include <ns3/nstime.h>
#include <ns3/uinteger.h>

namespace gradwire {

void apply_tcp_defaults(std::uint32_t mtu, std::uint32_t buffer_bytes,
                        std::uint32_t segment_frames) {
  const std::uint32_t frames = segment_frames == 0 ? 1 : segment_frames;
  ns3::Config::SetDefault("ns3::TcpSocket::SegmentSize",
                          ns3::UintegerValue(frames * (mtu - kTcpIpHeaderBytes)));
  // ns-3 counts these in segments; in bytes they must stay per-frame TCP's. Defaults are
  // process-wide, so every network sets all of them (a per-frame network built after an
  // offloading one in the same process gets ns-3's values back).
  // The initial window stays 10 frames' payload (offloaded segments divide it).
  ns3::Config::SetDefault("ns3::TcpSocket::InitialCwnd",
                          ns3::UintegerValue(std::max(1u, kInitialWindowFrames / frames)));
  // A receiver with GRO acknowledges every aggregated segment at once (Linux's quick ACK for a
  // segment of two or more MSS); delaying the ACK of a lone 10-frame segment would stall the
  // initial window for the 40 ms timeout. Cubic grows its window by bytes acknowledged in slow
  // start, so fewer ACKs do not slow it.
  ns3::Config::SetDefault("ns3::TcpSocket::DelAckCount", ns3::UintegerValue(frames > 1 ? 1 : 2));
  // HyStart watches the window from 16 segments on: 16 frames' worth.
  ns3::Config::SetDefault("ns3::TcpCubic::HyStartLowWindow",
                          ns3::UintegerValue(std::max(1u, (16 + frames - 1) / frames)));

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
