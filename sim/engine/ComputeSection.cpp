#include "sim/engine/ComputeSection.h"

#include <algorithm>

#include "common/ConfigError.h"
#include "sim/engine/ComputeTime.h"

namespace gradwire {

namespace {

/// `compute.codec_time` and its companions. By default codec work is timed the way compute is:
/// measured when compute is measured, on the named device when compute runs on a profile, and
/// free when compute is a fixed or per-sample figure (there is no device to time it on).
void read_codec_time(const JsonFields& f, ComputeSpec& c) {
  const std::vector<std::string> names = device_profile_names();
  const bool devices = !c.profile.empty() || !c.profile_entries.empty();
  const std::string fallback = c.mode == "measured" ? "measured"
                               : devices            ? "profile"
                                                    : "free";
  c.codec_time = f.string("codec_time", fallback, {"free", "measured", "profile"});
  c.codec_scale = f.number("codec_scale", c.mode == "measured" ? c.scale : 1.0, 0, 1e6, true);
  c.codec_device = f.string("codec_device", c.profile, names);
  if (c.codec_time != "measured" && f.has("codec_scale")) {
    throw ConfigError(f.path_of("codec_scale"), "only valid with compute.codec_time \"measured\"");
  }
  if (c.codec_time != "profile" && f.has("codec_device")) {
    throw ConfigError(f.path_of("codec_device"), "only valid with compute.codec_time \"profile\"");
  }
  // Without codec_device, a list of devices times each worker's codec work on its own.
  if (c.codec_time == "profile" && c.codec_device.empty() && c.profile_entries.empty()) {
    throw ConfigError(f.path_of("codec_device"),
                      "missing; profile codec time needs a device: name one of the device "
                      "profiles (e.g. \"v100\"), or set compute.profile");
  }
}

/// `compute.profile` as a list: one device name per worker, or {"profile", "count"} runs of
/// workers, or {"profile", "group"} for the workers of a hybrid network's group. Expanded to
/// one name per worker by resolve_worker_profiles, once the workers and the network are known.
void read_profile_list(const JsonFields& f, ComputeSpec& c) {
  const std::vector<std::string> names = device_profile_names();
  const nlohmann::json& list = f.object().at("profile");
  const std::string path = f.path_of("profile");
  if (list.empty()) {
    throw ConfigError(path, "expected a device name or a non-empty list (one device per worker, "
                            "or {\"profile\": name, \"count\": n} groups)");
  }
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    ComputeSpec::ProfileEntry entry;
    if (list[i].is_string()) {
      entry.name = list[i].get<std::string>();
      if (std::find(names.begin(), names.end(), entry.name) == names.end()) {
        std::string known;
        for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
        throw ConfigError(at, "expected a device profile (" + known + "), got \"" + entry.name + "\"");
      }
      entry.count = 1;
    } else if (list[i].is_object()) {
      JsonFields e(list[i], at);
      e.allow({"profile", "count", "group"});
      entry.name = e.required_string("profile", names);
      if (e.has("count") == e.has("group")) {
        throw ConfigError(at, "expected exactly one of count (workers on this device) or "
                              "group (a hybrid network group's index)");
      }
      entry.count = e.has("count") ? e.integer("count", 1, 1, 100000) : -1;
      entry.group = e.has("group") ? e.integer("group", 0, 0, 100000) : -1;
    } else {
      throw ConfigError(at, "expected a device name or {\"profile\": name, \"count\": n}, got " +
                                json_brief(list[i]));
    }
    c.profile_entries.push_back(entry);
  }
  const bool groups = c.profile_entries.front().group >= 0;
  for (std::size_t i = 0; i < c.profile_entries.size(); ++i) {
    if ((c.profile_entries[i].group >= 0) != groups) {
      throw ConfigError(path + "[" + std::to_string(i) + "]",
                        "expected every entry to name a hybrid group, or none (a list is either "
                        "per worker or per group)");
    }
  }
}

}  // namespace

void resolve_worker_profiles(ComputeSpec& c, int workers, const NetworkSettings& network) {
  if (c.profile_entries.empty()) return;
  const std::string path = "compute.profile";
  std::vector<std::string> per_worker;
  if (c.profile_entries.front().group >= 0) {
    const nlohmann::json& net = network.to_json();
    if (network.family() != "hybrid") {
      throw ConfigError(path + "[0].group", "expected a hybrid network (network.family "
                                            "\"hybrid\"), got \"" + network.family() + "\"");
    }
    const nlohmann::json& groups = net.at("groups");
    std::vector<std::string> of_group(groups.size());
    for (std::size_t i = 0; i < c.profile_entries.size(); ++i) {
      const auto& e = c.profile_entries[i];
      const std::string at = path + "[" + std::to_string(i) + "].group";
      if (static_cast<std::size_t>(e.group) >= groups.size()) {
        throw ConfigError(at, "expected a group index below " + std::to_string(groups.size()) +
                                  " (network.groups), got " + std::to_string(e.group));
      }
      if (!of_group[static_cast<std::size_t>(e.group)].empty()) {
        throw ConfigError(at, "group " + std::to_string(e.group) + " is named twice");
      }
      of_group[static_cast<std::size_t>(e.group)] = e.name;
    }
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (of_group[g].empty()) {
        throw ConfigError(path, "expected a device for every hybrid group; group " +
                                    std::to_string(g) + " has none");
      }
      const auto n = groups[g].at("workers").get<std::int64_t>();
      per_worker.insert(per_worker.end(), static_cast<std::size_t>(n), of_group[g]);
    }
    // The network says so too, but only once it is built: every worker needs its device first.
    if (per_worker.size() != static_cast<std::size_t>(workers)) {
      throw ConfigError("network.groups", "the groups hold " + std::to_string(per_worker.size()) +
                                              " workers, but training.workers is " +
                                              std::to_string(workers));
    }
  } else {
    std::int64_t total = 0;
    for (const auto& e : c.profile_entries) total += e.count;
    if (total != workers) {
      throw ConfigError(path, "expected a device for each of the " + std::to_string(workers) +
                                  " workers (training.workers), got " + std::to_string(total));
    }
    for (const auto& e : c.profile_entries) {
      per_worker.insert(per_worker.end(), static_cast<std::size_t>(e.count), e.name);
    }
  }
  c.worker_profiles = std::move(per_worker);
}

ComputeSpec read_compute(const JsonFields& f) {
  f.allow({"mode", "scale", "seconds", "profile", "seconds_per_sample", "flops_per_sample",
           "device", "threads", "parallel_workers", "slow_workers", "stragglers", "codec_time",
           "codec_scale", "codec_device", "measured_on"});
  ComputeSpec c;
  c.mode = f.string("mode", c.mode, {"measured", "fixed", "profile"});
  c.scale = f.number("scale", 1.0, 0, 1e6, true);
  c.seconds = f.number("seconds", c.seconds, 0, 1e6);
  c.device = f.string("device", c.device, {"auto", "cpu", "cuda"});
  c.threads = static_cast<int>(f.integer("threads", 0, 0, 256));
  c.parallel_workers = static_cast<int>(f.integer("parallel_workers", 1, 1, 256));
  if (c.parallel_workers > 1 && c.mode == "measured") {
    // The pass's simulated time must be known before it runs to keep the events in order, and
    // passes running at once share caches and memory bandwidth.
    throw ConfigError(f.path_of("parallel_workers"),
                      "expected 1 with compute.mode \"measured\" (measured compute times each "
                      "worker's pass alone); use \"fixed\" or \"profile\" to compute workers "
                      "in parallel");
  }
  if (c.mode == "profile") {
    const std::vector<std::string> names = device_profile_names();
    if (f.has("profile") == f.has("seconds_per_sample")) {
      throw ConfigError(f.path_of("profile"),
                        "expected exactly one of profile (a device name) or seconds_per_sample "
                        "with compute.mode \"profile\"");
    }
    if (f.has("profile") && f.object().at("profile").is_array()) {
      read_profile_list(f, c);
    } else {
      c.profile = f.string("profile", "", names);
    }
    c.seconds_per_sample = f.number("seconds_per_sample", 0, 0, 1e6, true);
    c.flops_per_sample = f.integer("flops_per_sample", 0, 1, std::int64_t{1} << 50);
    if (f.has("flops_per_sample") && c.profile.empty() && c.profile_entries.empty()) {
      throw ConfigError(f.path_of("flops_per_sample"),
                        "expected only with compute.profile (a device), not seconds_per_sample");
    }
  } else if (c.mode == "measured" && (f.has("profile") || f.has("measured_on"))) {
    // Measured steps on named devices: this machine's wall time stands for `measured_on`, and
    // each worker's device is that much slower or faster.
    const std::vector<std::string> names = device_profile_names();
    if (!f.has("measured_on")) {
      throw ConfigError(f.path_of("measured_on"),
                        "missing; measured compute on named devices needs the device this "
                        "machine's steps stand for (e.g. \"cpu-core\")");
    }
    if (!f.has("profile")) {
      throw ConfigError(f.path_of("profile"), "missing; compute.measured_on needs the workers' "
                                              "devices (a name, or a list)");
    }
    c.measured_on = f.string("measured_on", "", names);
    if (f.object().at("profile").is_array()) {
      read_profile_list(f, c);  // same forms as in profile mode
    } else {
      c.profile = f.string("profile", "", names);
    }
  } else {
    for (const char* key : {"profile", "seconds_per_sample", "flops_per_sample"}) {
      if (f.has(key)) throw ConfigError(f.path_of(key), "only valid with compute.mode \"profile\"");
    }
  }
  for (const char* key : {"seconds_per_sample", "flops_per_sample"}) {
    if (c.mode != "profile" && f.has(key)) {
      throw ConfigError(f.path_of(key), "only valid with compute.mode \"profile\"");
    }
  }
  if (c.mode != "measured" && f.has("measured_on")) {
    throw ConfigError(f.path_of("measured_on"), "only valid with compute.mode \"measured\"");
  }
  if (c.mode != "fixed" && f.has("seconds")) {
    throw ConfigError(f.path_of("seconds"), "only valid with compute.mode \"fixed\"");
  }
  if (c.mode != "measured" && f.has("scale")) {
    throw ConfigError(f.path_of("scale"), "only valid with compute.mode \"measured\"");
  }
  if (f.has("slow_workers")) {
    const auto& list = f.object().at("slow_workers");
    if (!list.is_array()) {
      throw ConfigError(f.path_of("slow_workers"),
                        "expected an array like [{\"rank\": 0, \"scale\": 3.0}]");
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
      JsonFields w(list[i], f.path_of("slow_workers") + "[" + std::to_string(i) + "]");
      w.allow({"rank", "scale"});
      if (!w.has("rank")) throw ConfigError(w.path_of("rank"), "missing; expected a worker rank");
      const auto rank = static_cast<std::size_t>(w.integer("rank", 0, 0, 1023));
      const double scale = w.number("scale", 1.0, 0, 1e6, true);
      if (c.worker_scale.size() <= rank) c.worker_scale.resize(rank + 1, 1.0);
      c.worker_scale[rank] = scale;
    }
  }
  JsonFields st(f.object_at("stragglers"), f.path_of("stragglers"));
  st.allow({"probability", "slowdown"});
  c.straggler_probability = st.number("probability", 0, 0, 1);
  c.straggler_slowdown = st.number("slowdown", 3.0, 1, 1e6);
  read_codec_time(f, c);
  return c;
}

nlohmann::json compute_json(const ComputeSpec& c) {
  nlohmann::json compute = {{"mode", c.mode}, {"device", c.device},
                            {"threads", c.threads},
                            {"parallel_workers", c.parallel_workers}};
  if (c.mode == "measured") compute["scale"] = c.scale;
  if (c.mode == "fixed") compute["seconds"] = c.seconds;
  // A list resolves to one name per worker, which reads back to the same devices.
  const nlohmann::json profile = c.worker_profiles.empty() ? nlohmann::json(c.profile)
                                                           : nlohmann::json(c.worker_profiles);
  if (c.mode == "profile") {
    if (c.profile.empty() && c.worker_profiles.empty()) {
      compute["seconds_per_sample"] = c.seconds_per_sample;
    } else {
      compute["profile"] = profile;
      if (c.flops_per_sample > 0) compute["flops_per_sample"] = c.flops_per_sample;
    }
  }
  if (c.mode == "measured" && !c.measured_on.empty()) {
    compute["profile"] = profile;
    compute["measured_on"] = c.measured_on;
  }
  // Only the workers that are slow: a scale of 1 is the default, and an empty list would read
  // back as no list at all, so the resolved form would not resolve to itself.
  nlohmann::json slow = nlohmann::json::array();
  for (std::size_t r = 0; r < c.worker_scale.size(); ++r) {
    if (c.worker_scale[r] != 1.0) {
      slow.push_back({{"rank", r}, {"scale", c.worker_scale[r]}});
    }
  }
  if (!slow.empty()) compute["slow_workers"] = slow;
  compute["codec_time"] = c.codec_time;
  if (c.codec_time == "measured") compute["codec_scale"] = c.codec_scale;
  if (c.codec_time == "profile" && !c.codec_device.empty()) compute["codec_device"] = c.codec_device;
  if (c.straggler_probability > 0) {
    compute["stragglers"] = {{"probability", c.straggler_probability},
                             {"slowdown", c.straggler_slowdown}};
  }
  return compute;
}

}  // namespace gradwire
