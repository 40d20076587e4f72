#include "sim/engine/ComputeSection.h"

#include "common/ConfigError.h"
#include "sim/engine/ComputeTime.h"

namespace gradwire {

namespace {

/// `compute.codec_time` and its companions. By default codec work is timed the way compute is:
/// measured when compute is measured, on the named device when compute runs on a profile, and
/// free when compute is a fixed or per-sample figure (there is no device to time it on).
void read_codec_time(const JsonFields& f, ComputeSpec& c) {
  const std::vector<std::string> names = device_profile_names();
  const std::string fallback = c.mode == "measured" ? "measured"
                               : !c.profile.empty() ? "profile"
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
  if (c.codec_time == "profile" && c.codec_device.empty()) {
    throw ConfigError(f.path_of("codec_device"),
                      "missing; profile codec time needs a device: name one of the device "
                      "profiles (e.g. \"v100\"), or set compute.profile");
  }
}

}  // namespace

ComputeSpec read_compute(const JsonFields& f) {
  f.allow({"mode", "scale", "seconds", "profile", "seconds_per_sample", "flops_per_sample",
           "device", "threads", "parallel_workers", "slow_workers", "stragglers", "codec_time",
           "codec_scale", "codec_device"});
  ComputeSpec c;
  c.mode = f.string("mode", c.mode, {"measured", "fixed", "profile"});
  c.scale = f.number("scale", 1.0, 0, 1e6, true);
  c.seconds = f.number("seconds", c.seconds, 0, 1e6);
  c.device = f.string("device", c.device, {"auto", "cpu", "cuda"});
  c.threads = static_cast<int>(f.integer("threads", 0, 0, 256));
  c.parallel_workers = static_cast<int>(f.integer("parallel_workers", 1, 1, 256));
  if (c.parallel_workers > 1 && c.mode == "measured") {
    // Measured compute times each pass's wall time, which passes running at once inflate, and
    // the pass's simulated time must be known before it runs to keep the events in order.
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
    c.profile = f.string("profile", "", names);
    c.seconds_per_sample = f.number("seconds_per_sample", 0, 0, 1e6, true);
    c.flops_per_sample = f.integer("flops_per_sample", 0, 1, std::int64_t{1} << 50);
    if (f.has("flops_per_sample") && c.profile.empty()) {
      throw ConfigError(f.path_of("flops_per_sample"),
                        "expected only with compute.profile (a device), not seconds_per_sample");
    }
  } else {
    for (const char* key : {"profile", "seconds_per_sample", "flops_per_sample"}) {
      if (f.has(key)) throw ConfigError(f.path_of(key), "only valid with compute.mode \"profile\"");
    }
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
  if (c.mode == "profile") {
    if (c.profile.empty()) {
      compute["seconds_per_sample"] = c.seconds_per_sample;
    } else {
      compute["profile"] = c.profile;
      if (c.flops_per_sample > 0) compute["flops_per_sample"] = c.flops_per_sample;
    }
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
  if (c.codec_time == "profile") compute["codec_device"] = c.codec_device;
  if (c.straggler_probability > 0) {
    compute["stragglers"] = {{"probability", c.straggler_probability},
                             {"slowdown", c.straggler_slowdown}};
  }
  return compute;
}

}  // namespace gradwire
