#include "netmodels/Impairments.h"

#include <algorithm>

#include <ns3/data-rate.h>
#include <ns3/double.h>
#include <ns3/inet-socket-address.h>
#include <ns3/ipv4-queue-disc-item.h>
#include <ns3/on-off-helper.h>
#include <ns3/packet-sink-helper.h>
#include <ns3/packet-sink.h>
#include <ns3/pointer.h>
#include <ns3/simulator.h>
#include <ns3/traffic-control-helper.h>
#include <ns3/traffic-control-layer.h>
#include <ns3/uinteger.h>

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/Units.h"
#include "common/DeclaredFields.h"
#include "netmodels/NetworkParams.h"

namespace gradwire {

namespace {

constexpr std::uint16_t kBackgroundPort = 9;

std::vector<int> read_host_list(const nlohmann::json& object, const std::string& key,
                                const std::string& path, bool allow_all) {
  if (!object.contains(key)) return {};
  const auto& v = object.at(key);
  const std::string where = path + "." + key;
  if (allow_all && v.is_string() && v.get<std::string>() == "all") return {};
  if (!v.is_array()) {
    throw ConfigError(where, std::string("expected ") + (allow_all ? "\"all\" or " : "") +
                                 "a list of host indices (negative counts from the end), got " +
                                 json_brief(v));
  }
  std::vector<int> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < -100000 ||
        v[i].get<std::int64_t>() > 100000) {
      throw ConfigError(where + "[" + std::to_string(i) + "]",
                        "expected a host index (integer; -1 = last host), got " +
                            json_brief(v[i]));
    }
    out.push_back(v[i].get<int>());
  }
  return out;
}

bool host_listed(const std::vector<int>& list, std::size_t index, std::size_t hosts) {
  if (list.empty()) return true;
  for (int h : list) {
    const long resolved = h < 0 ? static_cast<long>(hosts) + h : h;
    if (resolved == static_cast<long>(index)) return true;
  }
  return false;
}

const nlohmann::json& array_at(const nlohmann::json& object, const std::string& key,
                               const std::string& path) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  if (!object.contains(key)) return kEmpty;
  const auto& v = object.at(key);
  if (!v.is_array()) {
    throw ConfigError(path + "." + key, "expected a list of objects, got " + json_brief(v));
  }
  return v;
}

LossSpec read_loss(const nlohmann::json& object, const std::string& path) {
  const auto spec = [](const char* name) -> const ParamSpec& {
    return param_named(loss_params(), name);
  };
  JsonFields f(object, path);
  LossSpec l;
  l.model = declared_string(f, spec("model"));
  f.allow(loss_keys(l.model));
  if (l.model == "uniform") {
    l.rate = declared_number(f, spec("rate"));
  } else if (l.model == "gilbert-elliott") {
    l.p = declared_number(f, spec("p"));
    l.r = declared_number(f, spec("r"));
    l.loss_good = declared_number(f, spec("loss_good"));
    l.loss_bad = declared_number(f, spec("loss_bad"));
  }
  return l;
}

BackgroundFlowSpec read_background(const nlohmann::json& object, const std::string& path,
                                   bool wireless) {
  const std::vector<ParamSpec>& declared = background_params(wireless);
  const auto spec = [&](const char* name) -> const ParamSpec& {
    return param_named(declared, name);
  };
  JsonFields f(object, path);
  f.allow(allowed_keys({}, declared));
  BackgroundFlowSpec b;
  b.rate_bps = declared_rate(f, spec("rate"));
  b.on_s = declared_duration(f, spec("on"));
  b.off_s = declared_duration(f, spec("off"));
  check_declared_bounds(f, spec("on"), b.on_s);
  b.distribution = declared_string(f, spec("distribution"));
  b.packet_bytes = static_cast<std::uint32_t>(declared_integer(f, spec("packet_bytes")));
  b.direction = declared_string(f, spec("direction"));
  b.target = static_cast<int>(declared_integer(f, spec("target")));
  b.start_s = declared_duration(f, spec("start"));
  if (wireless) b.distance_m = declared_number(f, spec("distance_m"));
  return b;
}

MobilitySpec read_mobility(const nlohmann::json& object, const std::string& path) {
  const auto spec = [](const char* name) -> const ParamSpec& {
    return param_named(mobility_params(), name);
  };
  JsonFields f(object, path);
  MobilitySpec m;
  m.model = declared_string(f, spec("model"));
  f.allow(mobility_keys(m.model));
  if (m.model == "static") return m;
  if (m.model == "random-waypoint") m.pause_s = declared_duration(f, spec("pause"));
  m.speed_mps = declared_number(f, spec("speed_mps"));
  m.bounds_m = declared_number(f, spec("bounds_m"));
  return m;
}

nlohmann::json hosts_json(const std::vector<int>& hosts) {
  if (hosts.empty()) return "all";
  return hosts;
}

}  // namespace

double LossSpec::mean_loss() const {
  if (model == "uniform") return rate;
  if (model == "gilbert-elliott") {
    const double bad = p / (p + r);  // stationary probability of the bad state
    return (1 - bad) * loss_good + bad * loss_bad;
  }
  return 0.0;
}

ImpairmentsConfig ImpairmentsConfig::from_json(const nlohmann::json& object,
                                               const std::string& path, bool wireless) {
  const std::vector<ParamSpec>& declared = impairments_params(wireless);
  const auto spec = [&](const char* name) -> const ParamSpec& {
    return param_named(declared, name);
  };
  JsonFields f(object, path);
  f.allow(allowed_keys({}, declared));
  ImpairmentsConfig c;
  c.hosts = read_host_list(object, "hosts", path, true);
  c.loss = read_loss(f.object_at("loss"), f.path_of("loss"));
  c.delay_s = declared_duration(f, spec("delay"));
  c.jitter_s = declared_duration(f, spec("jitter"));
  // null, the declared default, means no cap.
  if (f.has("rate_cap") && !f.object().at("rate_cap").is_null()) {
    c.rate_cap_bps = declared_rate(f, spec("rate_cap"));
  }
  c.queue_packets = static_cast<std::uint32_t>(declared_integer(f, spec("queue")));
  const auto& outages = array_at(object, "outages", path);
  for (std::size_t i = 0; i < outages.size(); ++i) {
    const std::string p = f.path_of("outages") + "[" + std::to_string(i) + "]";
    JsonFields o(outages[i], p);
    o.allow(allowed_keys({}, outage_params()));
    if (!o.has("down") || !o.has("up")) {
      throw ConfigError(p, "expected {\"down\": \"1s\", \"up\": \"2s\"} (both required)");
    }
    OutageSpec s;
    s.down_s = declared_duration(o, param_named(outage_params(), "down"));
    s.up_s = declared_duration(o, param_named(outage_params(), "up"));
    if (s.up_s <= s.down_s) {
      throw ConfigError(o.path_of("up"), "expected a time after `down`");
    }
    s.hosts = read_host_list(outages[i], "hosts", p, true);
    c.outages.push_back(s);
  }
  const auto& background = array_at(object, "background", path);
  for (std::size_t i = 0; i < background.size(); ++i) {
    c.background.push_back(read_background(
        background[i], f.path_of("background") + "[" + std::to_string(i) + "]", wireless));
  }
  if (wireless) c.mobility = read_mobility(f.object_at("mobility"), f.path_of("mobility"));
  return c;
}

nlohmann::json ImpairmentsConfig::to_json(bool wireless) const {
  nlohmann::json loss_json = {{"model", loss.model}};
  if (loss.model == "uniform") loss_json["rate"] = loss.rate;
  if (loss.model == "gilbert-elliott") {
    loss_json.update({{"p", loss.p}, {"r", loss.r}, {"loss_good", loss.loss_good},
                      {"loss_bad", loss.loss_bad}});
  }
  nlohmann::json out = {{"hosts", hosts_json(hosts)},
                        {"loss", loss_json},
                        {"delay", format_duration(delay_s)},
                        {"jitter", format_duration(jitter_s)},
                        {"rate_cap", rate_cap_bps > 0 ? nlohmann::json(format_bps(rate_cap_bps))
                                                      : nlohmann::json(nullptr)},
                        {"queue", queue_packets},
                        {"outages", nlohmann::json::array()},
                        {"background", nlohmann::json::array()}};
  for (const auto& o : outages) {
    out["outages"].push_back({{"down", format_duration(o.down_s)},
                              {"up", format_duration(o.up_s)},
                              {"hosts", hosts_json(o.hosts)}});
  }
  for (const auto& b : background) {
    nlohmann::json j = {{"rate", format_bps(b.rate_bps)},     {"on", format_duration(b.on_s)},
                        {"off", format_duration(b.off_s)},    {"distribution", b.distribution},
                        {"packet_bytes", b.packet_bytes},     {"direction", b.direction},
                        {"target", b.target},                 {"start", format_duration(b.start_s)}};
    if (wireless) j["distance_m"] = b.distance_m;
    out["background"].push_back(j);
  }
  if (wireless) {
    nlohmann::json m = {{"model", mobility.model}};
    if (mobility.model != "static") {
      m["speed_mps"] = mobility.speed_mps;
      m["bounds_m"] = mobility.bounds_m;
    }
    if (mobility.model == "random-waypoint") m["pause"] = format_duration(mobility.pause_s);
    out["mobility"] = m;
  }
  return out;
}

bool ImpairmentsConfig::shapes_packets() const {
  return loss.model != "none" || delay_s > 0 || jitter_s > 0 || rate_cap_bps > 0 ||
         !outages.empty();
}

bool ImpairmentsConfig::impairs(std::size_t index, std::size_t hosts_total) const {
  return host_listed(hosts, index, hosts_total);
}

std::vector<std::pair<double, double>> ImpairmentsConfig::outages_for(
    std::size_t index, std::size_t hosts_total) const {
  std::vector<std::pair<double, double>> out;
  for (const auto& o : outages) {
    if (host_listed(o.hosts, index, hosts_total)) out.emplace_back(o.down_s, o.up_s);
  }
  return out;
}

namespace {
std::int64_t g_next_stream = 0;
}

void reset_streams() { g_next_stream = 0; }

std::int64_t next_streams(std::int64_t count) {
  const std::int64_t first = g_next_stream;
  g_next_stream += count;
  return first;
}

// ---------------------------------------------------------------------------------------------

NS_OBJECT_ENSURE_REGISTERED(NetemQueueDisc);

ns3::TypeId NetemQueueDisc::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("gradwire::NetemQueueDisc")
                               .SetParent<ns3::QueueDisc>()
                               .SetGroupName("TrafficControl")
                               .AddConstructor<NetemQueueDisc>();
  return tid;
}

NetemQueueDisc::NetemQueueDisc() : ns3::QueueDisc(ns3::QueueDiscSizePolicy::NO_LIMITS) {
  random_ = ns3::CreateObject<ns3::UniformRandomVariable>();
  random_->SetStream(next_streams(1));
}

NetemQueueDisc::~NetemQueueDisc() = default;

void NetemQueueDisc::Configure(const ImpairmentsConfig& config, Windows outages,
                               std::map<ns3::Ipv4Address, Windows> only_to) {
  config_ = config;
  outages_ = std::move(outages);
  only_to_ = std::move(only_to);
}

void NetemQueueDisc::DoDispose() {
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
  const LossSpec& l = config_.loss;
  if (l.model == "uniform") return l.rate > 0 && random_->GetValue() < l.rate;
  if (l.model == "gilbert-elliott") {
    // Transition first, then lose with the new state's probability (as netem's "gemodel").
    const double u = random_->GetValue();
    flow.bad = flow.bad ? !(u < l.r) : (u < l.p);
    const double loss = flow.bad ? l.loss_bad : l.loss_good;
    return loss > 0 && random_->GetValue() < loss;
  }
  return false;
}

bool NetemQueueDisc::DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) {
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
    DropBeforeEnqueue(item, "link down (outage)");
    return false;
  }
  if (held_ >= config_.queue_packets) {
    DropBeforeEnqueue(item, "netem queue full");
    return false;
  }
  Flow& flow = flows_[key];
  flow.outages = windows;
  if (impaired && draw_loss(flow)) {
    ++lost_;
    DropBeforeEnqueue(item, "netem loss");
    return false;
  }
  ns3::Time due = now;
  if (impaired) {
    if (config_.rate_cap_bps > 0) {
      const ns3::Time start = std::max(now, flow.next_free);
      flow.next_free =
          start + ns3::Seconds(8.0 * item->GetSize() / config_.rate_cap_bps);
      due = flow.next_free;
    }
    double delay = config_.delay_s;
    if (config_.jitter_s > 0) {
      delay += (2.0 * random_->GetValue() - 1.0) * config_.jitter_s;
      delay = std::max(0.0, delay);
    }
    due += ns3::Seconds(delay);
  }
  due = std::max(due, flow.last_due);
  flow.last_due = due;
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

ns3::Ptr<NetemQueueDisc> install_netem(ns3::Ptr<ns3::NetDevice> device,
                                       const ImpairmentsConfig& config,
                                       NetemQueueDisc::Windows outages,
                                       std::map<ns3::Ipv4Address, NetemQueueDisc::Windows> only_to) {
  ns3::TrafficControlHelper tc;
  auto layer = device->GetNode()->GetObject<ns3::TrafficControlLayer>();
  if (layer && layer->GetRootQueueDiscOnDevice(device)) tc.Uninstall(device);
  tc.SetRootQueueDisc("gradwire::NetemQueueDisc");
  ns3::QueueDiscContainer installed = tc.Install(device);
  auto netem = ns3::DynamicCast<NetemQueueDisc>(installed.Get(0));
  netem->Configure(config, std::move(outages), std::move(only_to));
  return netem;
}

std::vector<ns3::Ptr<NetemQueueDisc>> apply_impairments(
    const ImpairmentsConfig& config, const std::vector<HostAttachment>& hosts) {
  std::vector<ns3::Ptr<NetemQueueDisc>> out;
  if (!config.shapes_packets()) return out;
  // Per device: either impaired for everything (with these windows) or per destination. Kept
  // in host order: each queue disc draws its stream number when it is made, so the order in
  // which they are installed must not depend on where the devices happen to lie in memory.
  struct Whole {
    ns3::Ptr<ns3::NetDevice> device;
    NetemQueueDisc::Windows windows;
  };
  struct Filtered {
    ns3::Ptr<ns3::NetDevice> device;
    std::map<ns3::Ipv4Address, NetemQueueDisc::Windows> only_to;
  };
  std::vector<Whole> whole;
  std::vector<Filtered> filtered;
  const auto whole_entry = [&whole](const ns3::Ptr<ns3::NetDevice>& device) -> Whole& {
    for (auto& w : whole) {
      if (w.device == device) return w;
    }
    whole.push_back({device, {}});
    return whole.back();
  };
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (!config.impairs(h, hosts.size())) continue;
    const auto windows = config.outages_for(h, hosts.size());
    const HostAttachment& a = hosts[h];
    if (a.own) whole_entry(a.own).windows = windows;
    if (a.far && !a.far_shared) whole_entry(a.far).windows = windows;
    if (a.far && a.far_shared) {
      auto it = std::find_if(filtered.begin(), filtered.end(),
                             [&a](const Filtered& f) { return f.device == a.far; });
      if (it == filtered.end()) it = filtered.insert(filtered.end(), Filtered{a.far, {}});
      it->only_to[a.address] = windows;
    }
  }
  for (const auto& w : whole) {
    filtered.erase(std::remove_if(filtered.begin(), filtered.end(),
                                  [&w](const Filtered& f) { return f.device == w.device; }),
                   filtered.end());
    out.push_back(install_netem(w.device, config, w.windows));
  }
  for (const auto& f : filtered) out.push_back(install_netem(f.device, config, {}, f.only_to));
  return out;
}

void start_background_flow(const BackgroundFlowSpec& flow, ns3::Ptr<ns3::Node> from,
                           ns3::Ptr<ns3::Node> sink, ns3::Ipv4Address to) {
  const ns3::InetSocketAddress address(to, kBackgroundPort);
  ns3::OnOffHelper source("ns3::UdpSocketFactory", address);
  auto period = [&](double mean) -> ns3::Ptr<ns3::RandomVariableStream> {
    if (flow.distribution == "exponential") {
      auto rv = ns3::CreateObject<ns3::ExponentialRandomVariable>();
      rv->SetAttribute("Mean", ns3::DoubleValue(mean));
      return rv;
    }
    auto rv = ns3::CreateObject<ns3::ConstantRandomVariable>();
    rv->SetAttribute("Constant", ns3::DoubleValue(mean));
    return rv;
  };
  source.SetAttribute("OnTime", ns3::PointerValue(period(flow.on_s)));
  source.SetAttribute("OffTime", ns3::PointerValue(period(flow.off_s)));
  source.SetAttribute("DataRate", ns3::DataRateValue(ns3::DataRate(
                                      static_cast<std::uint64_t>(flow.rate_bps))));
  source.SetAttribute("PacketSize", ns3::UintegerValue(flow.packet_bytes));
  ns3::ApplicationContainer apps = source.Install(from);
  source.AssignStreams(ns3::NodeContainer(from), next_streams(4));
  apps.Start(ns3::Seconds(flow.start_s));

  // One sink per node is enough; a second flow to the same node would fail to bind.
  for (std::uint32_t i = 0; i < sink->GetNApplications(); ++i) {
    if (sink->GetApplication(i)->GetInstanceTypeId() == ns3::PacketSink::GetTypeId()) return;
  }
  ns3::PacketSinkHelper receiver("ns3::UdpSocketFactory",
                                 ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(),
                                                        kBackgroundPort));
  receiver.Install(sink).Start(ns3::Seconds(0));
}

}  // namespace gradwire
