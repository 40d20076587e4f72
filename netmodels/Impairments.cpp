#include "netmodels/Impairments.h"

#include <ns3/data-rate.h>
#include <ns3/double.h>
#include <ns3/inet-socket-address.h>
#include <ns3/on-off-helper.h>
#include <ns3/packet-sink-helper.h>
#include <ns3/packet-sink.h>
#include <ns3/pointer.h>
#include <ns3/string.h>
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
  if (m.model == "straight") m.heading_deg = declared_number(f, spec("heading_deg"));
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

std::function<ImpairmentsConfig(const nlohmann::json&, const std::string&)>
ImpairmentsConfig::reader(bool wireless) {
  return [wireless](const nlohmann::json& object, const std::string& path) {
    return from_json(object, path, wireless);
  };
}

std::function<nlohmann::json(const ImpairmentsConfig&)> ImpairmentsConfig::writer(
    bool wireless) {
  return [wireless](const ImpairmentsConfig& c) { return c.to_json(wireless); };
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
    if (mobility.model == "straight") m["heading_deg"] = mobility.heading_deg;
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

ns3::Ptr<NetemQueueDisc> install_netem(
    ns3::Ptr<ns3::NetDevice> device, const ImpairmentsConfig& config,
    NetemQueueDisc::Windows outages, StreamAllocator& streams,
    const std::map<ns3::Ipv4Address, NetemQueueDisc::Windows>& only_to) {
  ns3::TrafficControlHelper tc;
  auto layer = device->GetNode()->GetObject<ns3::TrafficControlLayer>();
  if (layer && layer->GetRootQueueDiscOnDevice(device)) tc.Uninstall(device);
  const LossSpec& loss = config.loss;
  tc.SetRootQueueDisc("gradwire::NetemQueueDisc",
                      "LossModel", ns3::StringValue(loss.model),
                      "LossRate", ns3::DoubleValue(loss.rate),
                      "GoodToBad", ns3::DoubleValue(loss.p),
                      "BadToGood", ns3::DoubleValue(loss.r),
                      "LossGood", ns3::DoubleValue(loss.loss_good),
                      "LossBad", ns3::DoubleValue(loss.loss_bad),
                      "DelaySeconds", ns3::DoubleValue(config.delay_s),
                      "JitterSeconds", ns3::DoubleValue(config.jitter_s),
                      "RateCapBps", ns3::DoubleValue(config.rate_cap_bps),
                      "Limit", ns3::UintegerValue(config.queue_packets));
  ns3::QueueDiscContainer installed = tc.Install(device);
  auto netem = ns3::DynamicCast<NetemQueueDisc>(installed.Get(0));
  netem->AssignStreams(streams.reserve(1));
  if (only_to.empty()) {
    netem->SetOutages(std::move(outages));
  } else {
    for (const auto& [destination, windows] : only_to) netem->ImpairOnlyTo(destination, windows);
  }
  return netem;
}

std::vector<ns3::Ptr<NetemQueueDisc>> apply_impairments(
    const ImpairmentsConfig& config, const std::vector<HostAttachment>& hosts,
    StreamAllocator& streams) {
  std::vector<ns3::Ptr<NetemQueueDisc>> out;
  if (!config.shapes_packets()) return out;
  // Per device: either impaired for everything (with these windows) or per destination. Each
  // queue disc takes the next stream, so they are installed in host order (each host's own
  // device, then the one that sends to it; devices impaired for everything first), never in
  // the order the devices happen to lie in memory.
  std::vector<ns3::Ptr<ns3::NetDevice>> whole_order, filtered_order;
  std::map<const ns3::NetDevice*, NetemQueueDisc::Windows> whole;
  std::map<const ns3::NetDevice*, std::map<ns3::Ipv4Address, NetemQueueDisc::Windows>> filtered;
  const auto impair_whole = [&](const ns3::Ptr<ns3::NetDevice>& device,
                                const NetemQueueDisc::Windows& windows) {
    if (!whole.count(ns3::PeekPointer(device))) whole_order.push_back(device);
    whole[ns3::PeekPointer(device)] = windows;
  };
  for (std::size_t h = 0; h < hosts.size(); ++h) {
    if (!config.impairs(h, hosts.size())) continue;
    const auto windows = config.outages_for(h, hosts.size());
    const HostAttachment& a = hosts[h];
    if (a.own) impair_whole(a.own, windows);
    if (a.far && !a.far_shared) impair_whole(a.far, windows);
    if (a.far && a.far_shared) {
      if (!filtered.count(ns3::PeekPointer(a.far))) filtered_order.push_back(a.far);
      filtered[ns3::PeekPointer(a.far)][a.address] = windows;
    }
  }
  for (const auto& device : whole_order) {
    out.push_back(install_netem(device, config, whole.at(ns3::PeekPointer(device)), streams));
  }
  for (const auto& device : filtered_order) {
    if (whole.count(ns3::PeekPointer(device))) continue;  // impaired for everything already
    out.push_back(
        install_netem(device, config, {}, streams, filtered.at(ns3::PeekPointer(device))));
  }
  return out;
}

void start_background_flow(const BackgroundFlowSpec& flow, ns3::Ptr<ns3::Node> from,
                           ns3::Ptr<ns3::Node> sink, ns3::Ipv4Address to,
                           StreamAllocator& streams) {
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
  source.AssignStreams(ns3::NodeContainer(from), streams.reserve(4));
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
