#include "sim/study/SweepPlan.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/study/NetworkLabel.h"

namespace gradwire {

namespace {

namespace fs = std::filesystem;

std::string sanitize(const std::string& text) {
  std::string out;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    out.push_back(std::isalnum(u) || c == '.' || c == '-' || c == '_' ? c : '-');
  }
  return out.empty() ? "x" : out;
}

std::string last_component(const std::string& path) {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

// Sets `path` (dotted) in `doc` to `value`, creating objects on the way.
void set_path(nlohmann::json& doc, const std::string& path, const nlohmann::json& value,
              const std::string& where) {
  nlohmann::json* node = &doc;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (key.empty() || !node->is_object()) {
      throw ConfigError(where, "expected a dotted path into the scenario object, got \"" + path + "\"");
    }
    if (dot == std::string::npos) {
      // null leaves the key out: a zip can give a section to some runs only.
      if (value.is_null()) {
        node->erase(key);
      } else {
        (*node)[key] = value;
      }
      return;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = nlohmann::json::object();
    start = dot + 1;
  }
}

// The value at a dotted path of a resolved scenario, or null when the path is absent.
const nlohmann::json* value_at(const nlohmann::json& doc, const std::string& path) {
  const nlohmann::json* node = &doc;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &node->at(key);
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

/// Whether every key of `selector` has its value in `scenario`.
bool selects(const nlohmann::json& scenario, const nlohmann::json& selector) {
  for (auto it = selector.begin(); it != selector.end(); ++it) {
    const nlohmann::json* v = value_at(scenario, it.key());
    if (v == nullptr || *v != it.value()) return false;
  }
  return true;
}

// A question names runs by scenario values; one that picks no run would be answered "not
// answered" only after hours of running, so it is refused before anything starts.
nlohmann::json read_question(const nlohmann::json& q, const std::vector<nlohmann::json>& runs) {
  if (!q.is_object()) throw ConfigError("question", "expected an object with text, candidate, baseline and per");
  JsonFields f(q, "question");
  f.allow({"text", "candidate", "baseline", "per"});
  f.required_string("text");
  for (const char* side : {"candidate", "baseline"}) {
    const std::string where = std::string("question.") + side;
    if (!q.contains(side) || !q.at(side).is_object() || q.at(side).empty()) {
      throw ConfigError(where, "expected an object of scenario keys and values, e.g. "
                               "{\"codec.kind\": \"dgc\", \"network.rate\": \"1Gbps\"}");
    }
    const nlohmann::json& selector = q.at(side);
    const bool any = std::any_of(runs.begin(), runs.end(),
                                 [&](const nlohmann::json& run) { return selects(run, selector); });
    if (!any) throw ConfigError(where, "expected to match at least one run of the sweep; none has " + selector.dump());
  }
  if (q.contains("per")) {
    const nlohmann::json& per = q.at("per");
    if (!per.is_array()) throw ConfigError("question.per", "expected an array of scenario keys, e.g. [\"training.workers\"]");
    for (std::size_t i = 0; i < per.size(); ++i) {
      const std::string where = "question.per[" + std::to_string(i) + "]";
      if (!per[i].is_string()) throw ConfigError(where, "expected a scenario key such as \"training.workers\"");
      // A key some runs lack (a Wi-Fi standard beside Ethernet runs) splits those runs under
      // "null"; a key no run has is a typo.
      const std::string key = per[i].get<std::string>();
      if (std::none_of(runs.begin(), runs.end(),
                       [&](const nlohmann::json& run) { return value_at(run, key) != nullptr; })) {
        throw ConfigError(where, "expected a key of the runs' scenarios; none has \"" + key + "\"");
      }
    }
  }
  return q;
}

// `exclude` removes the combinations a cross product makes but a study cannot run (a ring-only
// codec under a parameter server). Selectors match the scenario as the sweep writes it, before
// it is resolved, since an excluded run need not be valid.
std::vector<nlohmann::json> read_exclusions(const nlohmann::json& sweep) {
  if (!sweep.contains("exclude")) return {};
  const nlohmann::json& exclude = sweep.at("exclude");
  if (!exclude.is_array()) {
    throw ConfigError("exclude", "expected an array of selectors, e.g. "
                                 "[{\"codec.kind\": \"lgc_ring\", \"topology.kind\": \"ps\"}]");
  }
  for (std::size_t i = 0; i < exclude.size(); ++i) {
    if (!exclude[i].is_object() || exclude[i].empty()) {
      throw ConfigError("exclude[" + std::to_string(i) + "]",
                        "expected an object of scenario keys and values, e.g. "
                        "{\"codec.kind\": \"lgc_ring\", \"topology.kind\": \"ps\"}");
    }
  }
  return exclude.get<std::vector<nlohmann::json>>();
}

/// Whether a selector of `exclusions` picks `scenario`; marks every selector that does.
bool excluded(const nlohmann::json& scenario, const std::vector<nlohmann::json>& exclusions,
              std::vector<bool>& used) {
  bool out = false;
  for (std::size_t i = 0; i < exclusions.size(); ++i) {
    if (selects(scenario, exclusions[i])) used[i] = out = true;
  }
  return out;
}

// A selector that removes nothing is a typo, refused like a question that picks no run.
void check_exclusions(const std::vector<nlohmann::json>& exclusions,
                      const std::vector<bool>& used, std::size_t runs_left) {
  for (std::size_t i = 0; i < exclusions.size(); ++i) {
    if (!used[i]) {
      throw ConfigError("exclude[" + std::to_string(i) + "]",
                        "expected to match at least one run of the sweep; none has " +
                            exclusions[i].dump());
    }
  }
  if (!exclusions.empty() && runs_left == 0) {
    throw ConfigError("exclude", "expected to leave at least one run; it removes them all");
  }
}

struct Axis {
  std::string path;
  std::vector<nlohmann::json> values;
};

std::vector<Axis> read_axes(const JsonFields& f, const std::string& key) {
  std::vector<Axis> axes;
  const nlohmann::json& obj = f.object_at(key);
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string where = f.path_of(key) + "." + it.key();
    if (!it.value().is_array() || it.value().empty()) {
      throw ConfigError(where, "expected a non-empty array of values");
    }
    axes.push_back({it.key(), std::vector<nlohmann::json>(it.value().begin(), it.value().end())});
  }
  return axes;
}

}  // namespace

// FNV-1a: a stable short fingerprint for values too long to spell out in a folder name.
static std::string fingerprint(const std::string& text) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08llx", static_cast<unsigned long long>(h & 0xffffffffull));
  return buf;
}

static std::string spelled_slug(const nlohmann::json& value);

std::string axis_value_slug(const nlohmann::json& value) {
  // Long values (a whole network object) keep a readable head and a fingerprint, so names stay
  // short, distinct and stable across reruns.
  constexpr std::size_t kMax = 40;
  const std::string full = spelled_slug(value);
  if (full.size() <= kMax) return full;
  return full.substr(0, kMax - 9) + "-" + fingerprint(value.dump());
}

static std::string spelled_slug(const nlohmann::json& value) {
  if (value.is_string()) return sanitize(value.get<std::string>());
  if (value.is_object()) {
    const char* name_key = value.contains("kind") ? "kind" : value.contains("family") ? "family" : nullptr;
    std::string out = name_key ? spelled_slug(value.at(name_key)) : "obj";
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (name_key && it.key() == name_key) continue;
      if (it.value().is_boolean()) {
        if (it.value().get<bool>()) out += "-" + sanitize(it.key());
        continue;
      }
      // Strings speak for themselves ("async"); numbers need their key ("ratio0.01").
      out += "-" + (it.value().is_string() ? "" : sanitize(it.key())) + spelled_slug(it.value());
    }
    return out;
  }
  if (value.is_array()) {
    std::string out;
    for (const auto& v : value) out += (out.empty() ? "" : "+") + spelled_slug(v);
    return out.empty() ? "empty" : out;
  }
  return sanitize(value.dump());
}

SweepPlan SweepPlan::load(const std::string& path) {
  const nlohmann::json doc = read_scenario_file(path);
  const fs::path dir = fs::path(path).parent_path();
  return expand(doc, dir.empty() ? "." : dir.string());
}

SweepPlan SweepPlan::expand(const nlohmann::json& sweep, const std::string& base_dir) {
  JsonFields f(sweep, "");
  f.allow({"gradwire_sweep", "name", "description", "base", "set", "grid", "zip", "exclude",
           "seeds", "repetitions", "question"});
  if (!f.has("gradwire_sweep")) {
    throw ConfigError("gradwire_sweep", "missing; expected the sweep format version 1");
  }
  f.integer("gradwire_sweep", 1, 1, 1);
  SweepPlan plan;
  plan.name = f.required_string("name");
  if (sanitize(plan.name) != plan.name || plan.name[0] == '.') {
    throw ConfigError("name", "expected letters, digits, '-', '_' or '.' (it names the sweep folder)");
  }

  nlohmann::json base;
  if (!f.has("base")) throw ConfigError("base", "missing; expected a scenario file path or object");
  if (sweep.at("base").is_string()) {
    const fs::path p = fs::path(base_dir) / sweep.at("base").get<std::string>();
    try {
      base = read_scenario_file(p.string());
    } catch (const ConfigError& e) {
      throw ConfigError("base", std::string("expected a readable scenario file: ") + e.what());
    }
  } else if (sweep.at("base").is_object()) {
    base = sweep.at("base");
  } else {
    throw ConfigError("base", "expected a scenario file path or object, got " +
                                  json_brief(sweep.at("base")));
  }
  const nlohmann::json& fixed = f.object_at("set");
  for (auto it = fixed.begin(); it != fixed.end(); ++it) {
    set_path(base, it.key(), it.value(), "set." + it.key());
  }

  const std::vector<Axis> grid = read_axes(f, "grid");
  const std::vector<Axis> zip = read_axes(f, "zip");
  for (const Axis& a : zip) {
    if (a.values.size() != zip.front().values.size()) {
      throw ConfigError("zip." + a.path, "expected " + std::to_string(zip.front().values.size()) +
                                             " values, like the other zip axes");
    }
  }
  std::vector<std::uint64_t> seeds;
  if (f.has("seeds") && f.has("repetitions")) {
    throw ConfigError("repetitions", "give either seeds or repetitions, not both");
  }
  if (f.has("seeds")) {
    const auto& s = sweep.at("seeds");
    if (!s.is_array() || s.empty()) throw ConfigError("seeds", "expected a non-empty array of integers");
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!s[i].is_number_integer() || s[i].get<std::int64_t>() < 0) {
        throw ConfigError("seeds[" + std::to_string(i) + "]", "expected an integer >= 0");
      }
      seeds.push_back(s[i].get<std::uint64_t>());
    }
  } else if (f.has("repetitions")) {
    const auto reps = f.integer("repetitions", 1, 1, 10000);
    for (std::int64_t i = 1; i <= reps; ++i) seeds.push_back(static_cast<std::uint64_t>(i));
  } else {
    seeds.push_back(base.value("seed", 1));
  }

  // The size of the sweep, counted before a single scenario is made: a typo in a grid must not
  // write a hundred thousand files before anything runs.
  double total = static_cast<double>(seeds.size()) *
                 static_cast<double>(zip.empty() ? 1 : zip.front().values.size());
  for (const Axis& a : grid) total *= static_cast<double>(std::max<std::size_t>(1, a.values.size()));
  if (total > static_cast<double>(kMaxSweepRuns)) {
    throw ConfigError(grid.empty() ? "zip" : "grid",
                      "expected at most " + std::to_string(kMaxSweepRuns) +
                          " runs (grid values x zip tuples x seeds), got " +
                          std::to_string(static_cast<long long>(total)) +
                          "; split the study into several sweeps");
  }

  // Column names: the last path component when unique, else the whole path.
  std::vector<std::string> paths;
  for (const Axis& a : grid) paths.push_back(a.path);
  for (const Axis& a : zip) paths.push_back(a.path);
  std::set<std::string> seen;
  for (const auto& p : paths) {
    if (!seen.insert(p).second) throw ConfigError(p, "axis given twice (grid and zip)");
  }
  std::vector<std::string> short_names;
  for (const auto& p : paths) {
    int same = 0;
    for (const auto& q : paths) same += last_component(q) == last_component(p);
    short_names.push_back(same == 1 ? last_component(p) : p);
  }
  plan.axes = paths;
  plan.axes.push_back("seed");

  // Cross product of the grid axes, times the zip tuples, times the seeds.
  std::vector<std::vector<nlohmann::json>> combos = {{}};
  for (const Axis& a : grid) {
    std::vector<std::vector<nlohmann::json>> next;
    for (const auto& c : combos) {
      for (const auto& v : a.values) {
        auto d = c;
        d.push_back(v);
        next.push_back(std::move(d));
      }
    }
    combos = std::move(next);
  }
  const std::size_t tuples = zip.empty() ? 1 : zip.front().values.size();
  std::set<std::string> names;
  std::vector<nlohmann::json> resolved;
  const std::vector<nlohmann::json> exclusions = read_exclusions(sweep);
  std::vector<bool> used_exclusions(exclusions.size(), false);
  for (const auto& combo : combos) {
    for (std::size_t t = 0; t < tuples; ++t) {
      std::vector<nlohmann::json> values = combo;
      for (const Axis& a : zip) values.push_back(a.values[t]);
      for (std::uint64_t seed : seeds) {
        SweepRun run;
        run.scenario = base;
        // The name from the values as written; a whole network object is named by its label
        // below, once the run is resolved.
        std::string name;
        for (std::size_t i = 0; i < values.size(); ++i) {
          set_path(run.scenario, paths[i], values[i], i < grid.size() ? "grid." + paths[i] : "zip." + paths[i]);
          run.axis_values.push_back(values[i].is_string() ? values[i].get<std::string>()
                                                          : values[i].dump());
          name += (name.empty() ? "" : "__") + short_names[i] + "=" + axis_value_slug(values[i]);
        }
        run.axis_values.push_back(std::to_string(seed));
        run.seed = seed;
        run.scenario["seed"] = seed;
        if (excluded(run.scenario, exclusions, used_exclusions)) continue;
        // Every run must be a valid scenario before anything starts.
        run.scenario["name"] = "sweep-run";
        nlohmann::json doc;
        try {
          doc = load_scenario(run.scenario).resolved;
        } catch (const ConfigError& e) {
          const std::string what = e.what();
          const std::string message = what.substr(std::min(what.size(), e.path().size() + 2));
          throw ConfigError(e.path(), "in run " + name + "__seed=" + std::to_string(seed) + ": " +
                                          message);
        }
        name.clear();
        for (std::size_t i = 0; i < values.size(); ++i) {
          std::string slug = axis_value_slug(values[i]);
          if (paths[i] == "network" && values[i].is_object()) {
            // "802.11ax-80-MHz-8-stations-within-15-m-cf1aa918": the label, and the fingerprint
            // of the value as written, which keeps two networks with one label apart.
            constexpr std::size_t kMaxLabel = 64;
            std::string label = label_slug(network_label(
                doc.at("network"), doc.at("training").value("workers", std::int64_t{0})));
            if (label.size() > kMaxLabel) label = label.substr(0, kMaxLabel);
            while (label.size() > 1 && (label.back() == '-' || label.back() == '.')) label.pop_back();
            slug = label + "-" + fingerprint(values[i].dump());
          }
          name += (name.empty() ? "" : "__") + short_names[i] + "=" + slug;
        }
        name += (name.empty() ? "" : "__") + std::string("seed=") + std::to_string(seed);
        run.name = name.size() > 128 ? name.substr(0, 119) + "-" + fingerprint(name) : name;
        if (!names.insert(run.name).second) {
          throw ConfigError("grid", "two runs would share the folder name " + run.name +
                                        "; make the axis values distinguishable");
        }
        run.scenario["name"] = run.name;
        doc["name"] = run.name;
        resolved.push_back(std::move(doc));
        plan.runs.push_back(std::move(run));
      }
    }
  }
  check_exclusions(exclusions, used_exclusions, plan.runs.size());
  if (f.has("question")) plan.question = read_question(sweep.at("question"), resolved);
  return plan;
}

}  // namespace gradwire
