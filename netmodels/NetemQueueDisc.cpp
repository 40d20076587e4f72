#include "netmodels/NetemQueueDisc.h"

#include <algorithm>

#include <ns3/double.h>
#include <ns3/enum.h>
#include <ns3/ipv4-queue-disc-item.h>
#include <ns3/log.h>
#include <ns3/simulator.h>
#include <ns3/uinteger.h>

#include "netmodels/SmallQueuesTcpSocket.h"

namespace gradwire {

NS_LOG_COMPONENT_DEFINE("NetemQueueDisc");

NS_OBJECT_ENSURE_REGISTERED(NetemQueueDisc);

ns3::TypeId NetemQueueDisc::GetTypeId() {
  // Delay, jitter and rate are doubles, not ns3::Time and ns3::DataRate: each packet's delay
  // is computed from the scenario's seconds and bits per second as they are, where a Time
  // would round them to nanoseconds first (and a DataRate to whole bits per second).
  static ns3::TypeId tid =
      ns3::TypeId("gradwire::NetemQueueDisc")
          .SetParent<ns3::QueueDisc>()
          .SetGroupName("TrafficControl")
          .AddConstructor<NetemQueueDisc>()
          .AddAttribute("LossModel",
                        "how packets are lost: none, uniform (LossRate) or gilbert-elliott (a "
                        "two-state Markov chain stepped per packet)",
                        ns3::EnumValue(kNoLoss),
                        ns3::MakeEnumAccessor(&NetemQueueDisc::loss_model_),
                        ns3::MakeEnumChecker(kNoLoss, "none", kUniformLoss, "uniform",
                                             kGilbertElliottLoss, "gilbert-elliott"))
          .AddAttribute("LossRate", "uniform: probability that a packet is lost",
                        ns3::DoubleValue(0.0),
                        ns3::MakeDoubleAccessor(&NetemQueueDisc::loss_rate_),
                        ns3::MakeDoubleChecker<double>(0.0, 1.0))
          .AddAttribute("GoodToBad", "gilbert-elliott: P(good -> bad) per packet (p)",
                        ns3::DoubleValue(0.01),
                        ns3::MakeDoubleAccessor(&NetemQueueDisc::good_to_bad_),
                        ns3::MakeDoubleChecker<double>(0.0, 1.0))
          .AddAttribute("BadToGood", "gilbert-elliott: P(bad -> good) per packet (r)",
                        ns3::DoubleValue(0.25),
                        ns3::MakeDoubleAccessor(&NetemQueueDisc::bad_to_good_),
                        ns3::MakeDoubleChecker<double>(0.0, 1.0))
          .AddAttribute("LossGood", "gilbert-elliott: loss probability in the good state",
                        ns3::DoubleValue(0.0),
                        ns3::MakeDoubleAccessor(&NetemQueueDisc::loss_good_),
                        ns3::MakeDoubleChecker<double>(0.0, 1.0))
          .AddAttribute("LossBad", "gilbert-elliott: loss probability in the bad state",
                        ns3::DoubleValue(1.0),
                        ns3::MakeDoubleAccessor(&NetemQueueDisc::loss_bad_),
                        ns3::MakeDoubleChecker<double>(0.0, 1.0))
          .AddAttribute("DelaySeconds", "extra delay of every impaired packet, seconds",
                        ns3::DoubleValue(0.0),
                        ns3::MakeDoubleAccessor(&NetemQueueDisc::delay_s_),
                        ns3::MakeDoubleChecker<double>(0.0))
          .AddAttribute("JitterSeconds",
                        "each packet's delay is uniform in [delay - jitter, delay + jitter] "
                        "(never below 0; packet order is kept), seconds",
                        ns3::DoubleValue(0.0),
                        ns3::MakeDoubleAccessor(&NetemQueueDisc::jitter_s_),
                        ns3::MakeDoubleChecker<double>(0.0))
          .AddAttribute("RateCapBps",
                        "packets serialise at this rate, bits per second; 0: no cap",
                        ns3::DoubleValue(0.0),
                        ns3::MakeDoubleAccessor(&NetemQueueDisc::rate_cap_bps_),
                        ns3::MakeDoubleChecker<double>(0.0))
          .AddAttribute("Limit", "packets held at most; more are dropped (netem's limit)",
                        ns3::UintegerValue(1000),
                        ns3::MakeUintegerAccessor(&NetemQueueDisc::limit_),
                        ns3::MakeUintegerChecker<std::uint32_t>(1));
  return tid;
}

NetemQueueDisc::NetemQueueDisc() : ns3::QueueDisc(ns3::QueueDiscSizePolicy::NO_LIMITS) {
  NS_LOG_FUNCTION(this);
  random_ = ns3::CreateObject<ns3::UniformRandomVariable>();
}

NetemQueueDisc::~NetemQueueDisc() = default;

void NetemQueueDisc::SetOutages(Windows outages) {
  NS_LOG_FUNCTION(this << outages.size());
  outages_ = std::move(outages);
}

void NetemQueueDisc::ImpairOnlyTo(ns3::Ipv4Address destination, Windows outages) {
  NS_LOG_FUNCTION(this << destination << outages.size());
  only_to_[destination] = std::move(outages);
}

std::int64_t NetemQueueDisc::AssignStreams(std::int64_t stream) {
  NS_LOG_FUNCTION(this << stream);
  random_->SetStream(stream);
  return 1;
}

void NetemQueueDisc::DoDispose() {
  NS_LOG_FUNCTION(this);
  wake_.Cancel();
  flows_.clear();
  random_ = nullptr;
  ns3::QueueDisc::DoDispose();
}

bool NetemQueueDisc::in_outage(const Windows* windows, ns3::Time t) {
  if (!windows) return false;
  const double s = t.GetSeconds();
  for (const auto& [down, up] : *windows) {
    if (s >= down && s < up) return true;
  }
  return false;
}

bool NetemQueueDisc::draw_loss(Flow& flow) {
  if (loss_model_ == kUniformLoss) return loss_rate_ > 0 && random_->GetValue() < loss_rate_;
  if (loss_model_ == kGilbertElliottLoss) {
    // Transition first, then lose with the new state's probability (as netem's "gemodel").
    const double u = random_->GetValue();
    flow.bad = flow.bad ? !(u < bad_to_good_) : (u < good_to_bad_);
    const double loss = flow.bad ? loss_bad_ : loss_good_;
    return loss > 0 && random_->GetValue() < loss;
  }
  return false;
}

bool NetemQueueDisc::DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) {
  NS_LOG_FUNCTION(this << item);
  const ns3::Time now = ns3::Simulator::Now();
  auto ip = ns3::DynamicCast<ns3::Ipv4QueueDiscItem>(item);
  // Non-IP traffic (ARP) and traffic to unfiltered destinations passes untouched (but an
  // unfiltered link that is down carries nothing at all).
  bool impaired = ip != nullptr;
  std::uint32_t key = 0;
  const Windows* windows = only_to_.empty() ? &outages_ : nullptr;
  if (ip && !only_to_.empty()) {
    const ns3::Ipv4Address dst = ip->GetHeader().GetDestination();
    auto it = only_to_.find(dst);
    impaired = it != only_to_.end();
    key = impaired ? dst.Get() : 0xFFFFFFFFu;
    if (impaired) windows = &it->second;
  } else if (!ip) {
    key = 0xFFFFFFFFu;
  }
  if (in_outage(windows, now)) {
    NS_LOG_LOGIC("link down (outage): dropping " << item);
    DropBeforeEnqueue(item, "link down (outage)");
    return false;
  }
  if (held_ >= limit_) {
    NS_LOG_LOGIC("queue full (" << held_ << " packets): dropping " << item);
    DropBeforeEnqueue(item, "netem queue full");
    return false;
  }
  Flow& flow = flows_[key];
  flow.outages = windows;
  if (impaired && draw_loss(flow)) {
    ++lost_;
    NS_LOG_LOGIC("netem loss: dropping " << item);
    DropBeforeEnqueue(item, "netem loss");
    return false;
  }
  ns3::Time due = now;
  if (impaired) {
    if (rate_cap_bps_ > 0) {
      const ns3::Time start = std::max(now, flow.next_free);
      flow.next_free = start + ns3::Seconds(8.0 * item->GetSize() / rate_cap_bps_);
      due = flow.next_free;
    }
    double delay = delay_s_;
    if (jitter_s_ > 0) {
      delay += (2.0 * random_->GetValue() - 1.0) * jitter_s_;
      delay = std::max(0.0, delay);
    }
    due += ns3::Seconds(delay);
  }
  due = std::max(due, flow.last_due);
  flow.last_due = due;
  NS_LOG_LOGIC("holding " << item << " until " << due.As(ns3::Time::S));
  // Linux's netem takes what it delays or shapes off its socket's account
  // (skb_orphan_partial): small queues would otherwise hold a socket to its limit per delay.
  if (due > now) SmallQueuesTcpSocket::PacketLeftHost(item->GetPacket());
  flow.queue.push_back(Held{item, due});
  ++held_;
  ++passed_;
  return true;
}

NetemQueueDisc::Flow* NetemQueueDisc::earliest(bool due_only) {
  Flow* best = nullptr;
  for (auto& [key, flow] : flows_) {
    if (flow.queue.empty()) continue;
    if (!best || flow.queue.front().due < best->queue.front().due) best = &flow;
  }
  if (best && due_only && best->queue.front().due > ns3::Simulator::Now()) return nullptr;
  return best;
}

void NetemQueueDisc::wake_at(ns3::Time t) {
  if (wake_.IsRunning() && wake_.GetTs() <= static_cast<std::uint64_t>(t.GetTimeStep())) return;
  wake_.Cancel();
  wake_ = ns3::Simulator::Schedule(t - ns3::Simulator::Now(), [this] { Run(); });
}

ns3::Ptr<ns3::QueueDiscItem> NetemQueueDisc::DoDequeue() {
  NS_LOG_FUNCTION(this);
  while (true) {
    Flow* flow = earliest(false);
    if (!flow) return nullptr;
    if (flow->queue.front().due > ns3::Simulator::Now()) {
      wake_at(flow->queue.front().due);
      return nullptr;
    }
    ns3::Ptr<ns3::QueueDiscItem> item = flow->queue.front().item;
    flow->queue.pop_front();
    --held_;
    if (in_outage(flow->outages, ns3::Simulator::Now())) {
      NS_LOG_LOGIC("link down (outage): dropping held " << item);
      DropAfterDequeue(item, "link down (outage)");
      continue;
    }
    // QueueDisc::Run stops after its quota of packets and nothing reschedules it unless a
    // new packet arrives: make sure the next held packet gets its own wake-up.
    if (Flow* next = earliest(false)) {
      wake_at(std::max(next->queue.front().due, ns3::Simulator::Now()));
    }
    return item;
  }
}

ns3::Ptr<const ns3::QueueDiscItem> NetemQueueDisc::DoPeek() {
  Flow* flow = earliest(true);
  return flow ? flow->queue.front().item : nullptr;
}

}  // namespace gradwire
