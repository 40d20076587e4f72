// The network declaration (netmodels/NetworkRegistry.h, netmodels/NetworkParams.h) against what
// the builders do and what the docs say: docs/networks.md carries exactly the generated
// reference, the declared defaults are the ones the builders fill in, every declared key is
// accepted with its default, unknown keys are rejected with their path, and resolved objects
// hold no key the declaration does not list.
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/FieldTable.h"
#include "netmodels/NetworkFactory.h"
#include "netmodels/NetworkParams.h"
#include "netmodels/NetworkRegistry.h"

namespace gradwire {
namespace {

using nlohmann::json;

const char* const kBeginMarker = "<!-- BEGIN gradwire networks --markdown -->\n";
const char* const kEndMarker = "<!-- END gradwire networks --markdown -->";

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// A default that is one fixed value: not computed from other keys, not required, not a nested
/// object or list (those are checked key by key below).
bool plain_default(const ParamSpec& p) {
  if (!p.default_text.empty() || p.default_value.is_null()) return false;
  switch (p.type) {
    case ParamSpec::Type::kNumber:
    case ParamSpec::Type::kInteger:
    case ParamSpec::Type::kBool:
    case ParamSpec::Type::kString:
    case ParamSpec::Type::kDuration:
    case ParamSpec::Type::kRate:
      return true;
    default:
      return false;
  }
}

bool listed(const std::vector<std::string>& names, const std::string& name) {
  for (const auto& n : names) {
    if (n == name) return true;
  }
  return false;
}

/// Every plain default of `declared` (restricted to `only` when given) is what `resolved`
/// holds for that key.
void expect_declared_defaults(const std::vector<ParamSpec>& declared, const json& resolved,
                              const std::string& where,
                              const std::vector<std::string>& only = {}) {
  for (const auto& p : declared) {
    if (!plain_default(p) || (!only.empty() && !listed(only, p.name))) continue;
    ASSERT_TRUE(resolved.contains(p.name)) << where << "." << p.name << " is not filled in";
    EXPECT_EQ(resolved.at(p.name), p.default_value)
        << where << "." << p.name << " resolves to " << resolved.at(p.name).dump()
        << " but is declared with default " << p.default_value.dump();
  }
}

std::set<std::string> key_set(const json& object) {
  std::set<std::string> keys;
  for (auto it = object.begin(); it != object.end(); ++it) keys.insert(it.key());
  return keys;
}

std::set<std::string> name_set(const std::vector<ParamSpec>& params,
                               const std::vector<std::string>& extra = {}) {
  std::set<std::string> names(extra.begin(), extra.end());
  for (const auto& p : params) names.insert(p.name);
  return names;
}

json resolve(const json& object) { return resolve_network(object, "network").to_json(); }

/// A hybrid network with one group of `family`, whose entry carries `group_keys`.
json hybrid_with_group(const std::string& family, const json& group_keys = json::object()) {
  json group = {{"family", family}, {"workers", 1}};
  group.update(group_keys);
  return {{"family", "hybrid"}, {"groups", json::array({group})}};
}

/// Every family that can be a hybrid group.
std::vector<const NetworkFamilyInfo*> group_families() {
  std::vector<const NetworkFamilyInfo*> out;
  for (const auto& f : NetworkRegistry::builtin().list()) {
    if (!f.group_params.empty()) out.push_back(&f);
  }
  return out;
}

/// `keys` without the selector: where an object names its kind, the kind is no default.
std::vector<std::string> besides(std::vector<std::string> keys, const std::string& selector) {
  std::vector<std::string> out;
  for (auto& k : keys) {
    if (k != selector) out.push_back(std::move(k));
  }
  return out;
}

/// A placement object of `kind` with its required keys.
json placement_of(const std::string& kind) {
  json p = {{"kind", kind}};
  if (kind == "distances") p["distances_m"] = {1.0, 2.0};
  return p;
}

// ---------------------------------------------------------------------------------------------

TEST(NetworkRegistry, ListsEthernetWifiLteAndHybrid) {
  const NetworkRegistry& r = NetworkRegistry::builtin();
  EXPECT_EQ(r.names(), (std::vector<std::string>{"ethernet", "wifi", "lte", "hybrid"}));
  EXPECT_EQ(network_families(), r.names());
  EXPECT_EQ(param_named(network_params(), "family").choices, r.names());
  for (const auto& f : r.list()) {
    EXPECT_EQ(r.find(f.name), &f) << f.name;
    EXPECT_EQ(&r.at(f.name), &f) << f.name;
    EXPECT_FALSE(f.summary.empty()) << f.name;
    EXPECT_TRUE(static_cast<bool>(f.resolve)) << f.name;
  }
  EXPECT_EQ(r.find("carrier-pigeon"), nullptr);
  EXPECT_THROW(r.at("carrier-pigeon"), std::logic_error);
  EXPECT_EQ(network_reference_json()["families"].size(), r.list().size());
}

// Resolving gives the typed settings every caller reads: the family, the transport, the MTU
// of the links, and the resolved object.
TEST(NetworkSettings, ResolvingGivesTheFamilyTransportAndMtu) {
  for (const auto& f : NetworkRegistry::builtin().list()) {
    const NetworkSettings settings = resolve_network(f.minimal, "network");
    EXPECT_EQ(settings.family(), f.name);
    EXPECT_FALSE(settings.transport().udp()) << f.name;
    EXPECT_EQ(settings.mtu(), 1500u) << f.name;
    EXPECT_EQ(settings.to_json().at("family"), f.name);
    EXPECT_EQ(settings.to_json().at("transport"), json({{"kind", "tcp"}})) << f.name;
    EXPECT_EQ(settings.to_json().at("label"), "") << f.name;
    EXPECT_EQ(settings.config().to_json(), [&] {
      json j = settings.to_json();
      j.erase("transport");
      j.erase("label");
      return j;
    }()) << f.name;
    // A label names the network and is kept as given; the family's keys do not see it.
    json labelled = f.minimal;
    labelled["label"] = "lab cell";
    EXPECT_EQ(resolve_network(labelled, "network").to_json().at("label"), "lab cell") << f.name;
  }
  for (const json& bad : {json(7), json(std::string(81, 'x')), json("tab\there")}) {
    try {
      resolve_network({{"family", "wifi"}, {"label", bad}}, "network");
      ADD_FAILURE() << "accepted label " << bad;
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), "network.label") << bad;
    }
  }
  const NetworkSettings jumbo =
      resolve_network({{"family", "ethernet"}, {"mtu", 9000}, {"transport", "udp"}}, "network");
  EXPECT_EQ(jumbo.mtu(), 9000u);
  EXPECT_TRUE(jumbo.transport().udp());
  EXPECT_EQ(jumbo.to_json().at("transport").at("kind"), "udp");
  // A copy shares the one configuration.
  const NetworkSettings copy = jumbo;
  EXPECT_EQ(&copy.config(), &jumbo.config());
  // Not resolved: nothing to build.
  const NetworkSettings none;
  EXPECT_EQ(none.family(), "");
  EXPECT_TRUE(none.to_json().is_null());
  EXPECT_THROW(none.build(2), std::logic_error);
  // The transport is checked after the family's keys, naming its path.
  try {
    resolve_network({{"family", "ethernet"}, {"transport", "quic"}}, "network");
    ADD_FAILURE() << "accepted transport quic";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "network.transport.kind");
  }
}

TEST(NetworkDocs, GeneratedReferenceIsUpToDate) {
  const std::string path = std::string(GRADWIRE_SOURCE_DIR) + "/docs/networks.md";
  const std::string doc = read_text(path);
  const auto begin = doc.find(kBeginMarker);
  const auto end = doc.find(kEndMarker);
  ASSERT_NE(begin, std::string::npos) << path << " lacks the line " << kBeginMarker;
  ASSERT_NE(end, std::string::npos) << path << " lacks the line " << kEndMarker;
  ASSERT_LT(begin, end);
  const auto first = begin + std::strlen(kBeginMarker);
  EXPECT_EQ(doc.substr(first, end - first), network_reference_markdown())
      << "docs/networks.md disagrees with the declaration: replace the lines between the "
         "markers by the output of `./build/gradwire networks --markdown`";
}

TEST(NetworkDefaults, EachFamilyFillsInItsDeclaredDefaults) {
  for (const auto& f : NetworkRegistry::builtin().list()) {
    const json resolved = resolve(f.minimal);
    EXPECT_EQ(resolved.at("family"), f.name);
    expect_declared_defaults(f.params, resolved, "network (" + f.name + ")");
  }
}

TEST(NetworkDefaults, EachHybridGroupFillsInItsDeclaredDefaults) {
  for (const NetworkFamilyInfo* f : group_families()) {
    const json group = resolve(hybrid_with_group(f->name)).at("groups").at(0);
    expect_declared_defaults(f->group_params, group, "network.groups[0] (" + f->name + ")");
    expect_declared_defaults(hybrid_group_params(), group, "network.groups[0]");
  }
}

TEST(NetworkDefaults, NestedObjectsFillInTheirDeclaredDefaults) {
  for (const bool wireless : {false, true}) {
    const std::string family = wireless ? "wifi" : "ethernet";
    const json impaired =
        resolve({{"family", family}, {"impairments", {{"background", {json::object()}}}}})
            .at("impairments");
    expect_declared_defaults(impairments_params(wireless), impaired,
                             "network.impairments (" + family + ")");
    expect_declared_defaults(background_params(wireless), impaired.at("background").at(0),
                             "network.impairments.background[0] (" + family + ")");
  }
  // Empty objects: the kind or model itself defaults to the declared one.
  const json plain = resolve({{"family", "wifi"},
                              {"impairments", {{"loss", json::object()}}}});
  expect_declared_defaults(placement_params(), plain.at("placement"), "network.placement",
                           {"kind"});
  expect_declared_defaults(loss_params(), plain.at("impairments").at("loss"),
                           "network.impairments.loss", {"model"});
  expect_declared_defaults(mobility_params(), plain.at("impairments").at("mobility"),
                           "network.impairments.mobility", {"model"});
  for (const auto& kind : param_named(placement_params(), "kind").choices) {
    const json placement =
        resolve({{"family", "wifi"}, {"placement", placement_of(kind)}}).at("placement");
    const auto keys = besides(placement_keys(kind), "kind");
    if (keys.empty()) continue;
    expect_declared_defaults(placement_params(), placement, "network.placement (" + kind + ")",
                             keys);
  }
  for (const auto& model : param_named(loss_params(), "model").choices) {
    const json loss =
        resolve({{"family", "ethernet"}, {"impairments", {{"loss", {{"model", model}}}}}})
            .at("impairments")
            .at("loss");
    const auto keys = besides(loss_keys(model), "model");
    if (keys.empty()) continue;
    expect_declared_defaults(loss_params(), loss, "network.impairments.loss (" + model + ")",
                             keys);
  }
  for (const auto& model : param_named(mobility_params(), "model").choices) {
    const json mobility =
        resolve({{"family", "wifi"}, {"impairments", {{"mobility", {{"model", model}}}}}})
            .at("impairments")
            .at("mobility");
    const auto keys = besides(mobility_keys(model), "model");
    if (keys.empty()) continue;
    expect_declared_defaults(mobility_params(), mobility,
                             "network.impairments.mobility (" + model + ")", keys);
  }
}

TEST(NetworkKeys, EveryDeclaredKeyIsAcceptedWithItsDefault) {
  for (const auto& f : NetworkRegistry::builtin().list()) {
    for (const auto& p : f.params) {
      if (p.default_value.is_null()) continue;  // required: no default to give
      json object = f.minimal;
      object[p.name] = p.default_value;
      EXPECT_NO_THROW(resolve(object)) << f.name << ": " << object.dump();
    }
  }
  for (const NetworkFamilyInfo* f : group_families()) {
    for (const auto& p : f->group_params) {
      if (p.default_value.is_null()) continue;
      const json object = hybrid_with_group(f->name, {{p.name, p.default_value}});
      EXPECT_NO_THROW(resolve(object)) << object.dump();
    }
  }
  for (const bool wireless : {false, true}) {
    for (const auto& p : impairments_params(wireless)) {
      const json object = {{"family", wireless ? "wifi" : "ethernet"},
                           {"impairments", {{p.name, p.default_value}}}};
      EXPECT_NO_THROW(resolve(object)) << object.dump();
    }
    for (const auto& p : background_params(wireless)) {
      const json object = {{"family", wireless ? "wifi" : "ethernet"},
                           {"impairments", {{"background", {{{p.name, p.default_value}}}}}}};
      EXPECT_NO_THROW(resolve(object)) << object.dump();
    }
  }
  for (const auto& p : outage_params()) {
    if (p.default_value.is_null()) continue;
    const json object = {
        {"family", "ethernet"},
        {"impairments",
         {{"outages", {{{"down", "1s"}, {"up", "2s"}, {p.name, p.default_value}}}}}}};
    EXPECT_NO_THROW(resolve(object)) << object.dump();
  }
  for (const auto& kind : param_named(placement_params(), "kind").choices) {
    for (const auto& name : placement_keys(kind)) {
      const ParamSpec& p = param_named(placement_params(), name);
      if (p.default_value.is_null()) continue;
      json placement = placement_of(kind);
      if (name != "kind") placement[name] = p.default_value;
      const json object = {{"family", "lte"}, {"placement", placement}};
      EXPECT_NO_THROW(resolve(object)) << object.dump();
    }
  }
  for (const auto& model : param_named(loss_params(), "model").choices) {
    for (const auto& name : loss_keys(model)) {
      json loss = {{"model", model}};
      if (name != "model") loss[name] = param_named(loss_params(), name).default_value;
      const json object = {{"family", "ethernet"}, {"impairments", {{"loss", loss}}}};
      EXPECT_NO_THROW(resolve(object)) << object.dump();
    }
  }
  for (const auto& model : param_named(mobility_params(), "model").choices) {
    for (const auto& name : mobility_keys(model)) {
      json mobility = {{"model", model}};
      if (name != "model") mobility[name] = param_named(mobility_params(), name).default_value;
      const json object = {{"family", "lte"}, {"impairments", {{"mobility", mobility}}}};
      EXPECT_NO_THROW(resolve(object)) << object.dump();
    }
  }
}

TEST(NetworkKeys, UnknownKeyIsRejectedNamingItsPath) {
  auto expect_rejected = [](const json& object, const std::string& path) {
    try {
      resolve(object);
      ADD_FAILURE() << "accepted " << object.dump();
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.path(), path) << e.what();
    }
  };
  for (const auto& f : NetworkRegistry::builtin().list()) {
    json object = f.minimal;
    object["no_such_key"] = 1;
    expect_rejected(object, "network.no_such_key");
  }
  for (const NetworkFamilyInfo* f : group_families()) {
    expect_rejected(hybrid_with_group(f->name, {{"no_such_key", 1}}),
                    "network.groups[0].no_such_key");
  }
}

// A key bound to its member reads and writes by its declared type, with the declared default.
TEST(FieldTable, ReadAndWriteEachKeyByItsDeclaredType) {
  struct Config {
    double rate_bps = 0, delay_s = 0, share = 0;
    std::uint32_t count = 0;
    std::string mode;
    bool on = false;
  };
  FieldTable<Config> members;
  members.add(params::rate("rate", "1Gbps", "r"), &Config::rate_bps)
      .add(params::duration("delay", "50us", "d"), &Config::delay_s)
      .add(params::number("share", 0.5, 0.0, 1.0, "s"), &Config::share)
      .add(params::integer("count", 3, 1, 10, "c"), &Config::count)
      .add(params::choice("mode", "a", {"a", "b"}, "m"), &Config::mode)
      .add(params::boolean("on", true, "o"), &Config::on);
  EXPECT_EQ(param_names(members.params()),
            (std::vector<std::string>{"rate", "delay", "share", "count", "mode", "on"}));
  Config c;
  const json object = {{"rate", "10Mbps"}, {"count", 7}, {"mode", "b"}};
  members.read(JsonFields(object, "x"), c);
  EXPECT_EQ(c.rate_bps, 10e6);
  EXPECT_DOUBLE_EQ(c.delay_s, 50e-6);  // 50 x 1e-6, as "50us" reads
  EXPECT_EQ(c.share, 0.5);
  EXPECT_EQ(c.count, 7u);
  EXPECT_EQ(c.mode, "b");
  EXPECT_TRUE(c.on);
  json out = json::object();
  members.write(c, out);
  EXPECT_EQ(out, json({{"rate", "10Mbps"}, {"delay", "50us"}, {"share", 0.5}, {"count", 7},
                       {"mode", "b"}, {"on", true}}));
  try {
    members.read(JsonFields(json{{"mode", "z"}}, "x"), c);
    ADD_FAILURE() << "accepted mode z";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "x.mode");
  }
  // A key bound to a member of another type is a bug, found where the table is made.
  EXPECT_THROW(FieldTable<Config>().add(params::rate("count", "1Gbps", "c"), &Config::count),
               std::logic_error);
  EXPECT_THROW(FieldTable<Config>().add(params::boolean("mode", true, "m"), &Config::mode),
               std::logic_error);
}

// A key whose default and bounds other keys narrow is read through the narrowed declaration,
// after the keys it depends on even when they are declared after it; the listing keeps the
// declaration.
TEST(FieldTable, NarrowedKeysReadAfterTheKeysTheyDependOn) {
  struct Config {
    std::uint32_t width = 0;
    std::string band;
  };
  FieldTable<Config> table;
  table
      .add(params::integer("width", 80, 20, 160, "w"), &Config::width,
           [](ParamSpec s, const Config& c) {
             if (c.band == "narrow") {
               s.default_value = 20;
               s.max = 40;
             }
             return s;
           })
      .add(params::choice("band", "wide", {"wide", "narrow"}, "b"), &Config::band);
  EXPECT_EQ(param_named(table.params(), "width").max, 160);
  Config c;
  table.read(JsonFields(json{{"band", "narrow"}}, "x"), c);
  EXPECT_EQ(c.width, 20u);
  table.read(JsonFields(json::object(), "x"), c);
  EXPECT_EQ(c.width, 80u);
  try {
    table.read(JsonFields(json{{"band", "narrow"}, {"width", 80}}, "x"), c);
    ADD_FAILURE() << "accepted width 80 on the narrow band";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "x.width");
  }
  const FieldTable<Config> width_only = table.without({"band"});
  EXPECT_EQ(param_names(width_only.params()), std::vector<std::string>{"width"});
  json out = json::object();
  width_only.write(c, out);
  EXPECT_EQ(out, json({{"width", 80}}));
}

// What the docs list is every key there is: a resolved object holds exactly the declared keys.
TEST(NetworkKeys, ResolvedObjectsHoldExactlyTheDeclaredKeys) {
  for (const auto& f : NetworkRegistry::builtin().list()) {
    EXPECT_EQ(key_set(resolve(f.minimal)), name_set(f.params, param_names(network_params())))
        << f.name;
  }
  for (const NetworkFamilyInfo* f : group_families()) {
    EXPECT_EQ(key_set(resolve(hybrid_with_group(f->name)).at("groups").at(0)),
              name_set(f->group_params, param_names(hybrid_group_params())))
        << f->name;
  }
  for (const bool wireless : {false, true}) {
    const json impaired = resolve({{"family", wireless ? "wifi" : "ethernet"},
                                   {"impairments",
                                    {{"outages", {{{"down", "1s"}, {"up", "2s"}}}},
                                     {"background", {json::object()}}}}})
                              .at("impairments");
    EXPECT_EQ(key_set(impaired), name_set(impairments_params(wireless))) << wireless;
    EXPECT_EQ(key_set(impaired.at("outages").at(0)), name_set(outage_params()));
    EXPECT_EQ(key_set(impaired.at("background").at(0)), name_set(background_params(wireless)))
        << wireless;
  }
}

}  // namespace
}  // namespace gradwire
