#include "sim/engine/ParticipationSection.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "common/ConfigError.h"
#include "common/DeclaredFields.h"
#include "common/InputFile.h"
#include "common/JsonFields.h"
#include "common/Units.h"

namespace gradwire {

namespace {

constexpr const char* kTracePath = "participation.availability.trace";
constexpr const char* kHeader = "rank,start_s,end_s";
// A trace is read whole at load time; a file past this is not a trace of a training run.
constexpr double kMinMeanPeriodS = 1e-3;
constexpr std::size_t kMaxTraceBytes = std::size_t{16} << 20;

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

/// A number in seconds, the whole field; false otherwise.
bool parse_seconds(const std::string& text, bool allow_inf, double& out) {
  if (allow_inf && text == "inf") {
    out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(out);
}

double positive_duration(const JsonFields& f, const std::string& key) {
  if (!f.has(key)) {
    throw ConfigError(f.path_of(key), "missing; expected a duration > 0 such as \"30s\"");
  }
  const double s = read_duration(f, key, 0);
  if (!(s > 0)) throw ConfigError(f.path_of(key), "expected a duration > 0, got \"0s\"");
  return s;
}

}  // namespace

std::vector<ParamSpec> participation_params() {
  using namespace params;
  return {
      derived(integer("clients_per_round", 1, 1, 1024,
                      "k: clients sampled per round from those available when it starts "
                      "(seeded with the scenario's seed); only they compute and push"),
              "all (training.workers)"),
      derived(duration("deadline", "0s",
                       "a round ends this long after it starts, or earlier once every sampled "
                       "client's update arrived; the server aggregates what arrived (required "
                       "with availability)"),
              "none (wait for every sampled client)"),
      derived(object("availability",
                     "when each client is available: {\"model\": \"on_off\", \"mean_on\": "
                     "\"60s\", \"mean_off\": \"30s\"} (exponential periods) or {\"trace\": "
                     "\"file\"} (available intervals per worker)"),
              "always available"),
  };
}

std::vector<ParamSpec> availability_params() {
  using namespace params;
  return {
      choice("model", "on_off", {"on_off"},
             "alternating available/unavailable periods, exponential, drawn per worker from "
             "the scenario's seed"),
      derived(duration("mean_on", "0s", "on_off: mean available period (>= 1ms)"), "required"),
      derived(duration("mean_off", "0s", "on_off: mean unavailable period (>= 1ms)"), "required"),
      derived(text("trace", "", "a trace file: rank,start_s,end_s per line (docs/scenarios.md)"),
              "none"),
  };
}

std::vector<std::vector<AvailableInterval>> read_availability_trace(std::istream& in,
                                                                    const std::string& file,
                                                                    int workers) {
  std::vector<std::vector<AvailableInterval>> out(static_cast<std::size_t>(workers));
  std::string line;
  int number = 0;
  bool content = false;
  std::size_t bytes = 0;
  while (std::getline(in, line)) {
    ++number;
    bytes += line.size() + 1;
    const auto fail = [&](const std::string& message) {
      throw ConfigError(kTracePath, file + ":" + std::to_string(number) + ": " + message);
    };
    if (bytes > kMaxTraceBytes) {
      fail("expected a trace of at most " + std::to_string(kMaxTraceBytes >> 20) + " MiB");
    }
    const std::string text = trim(line.substr(0, line.find('#')));
    if (text.empty()) continue;
    const bool first = !content;
    content = true;
    if (first && text == kHeader) continue;
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (true) {
      const auto comma = text.find(',', start);
      fields.push_back(trim(text.substr(start, comma == std::string::npos ? comma : comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (fields.size() != 3) {
      fail("expected rank,start_s,end_s (3 fields), got " + std::to_string(fields.size()) +
           " in \"" + text.substr(0, 60) + "\"");
    }
    const std::string& rank_text = fields[0];
    if (rank_text.empty() || rank_text.size() > 6 ||
        rank_text.find_first_not_of("0123456789") != std::string::npos) {
      fail("expected a worker rank (0 .. " + std::to_string(workers - 1) + "), got \"" +
           rank_text.substr(0, 20) + "\"");
    }
    const int rank = std::stoi(rank_text);
    if (rank >= workers) {
      fail("rank " + std::to_string(rank) + " is not a worker of this run (training.workers = " +
           std::to_string(workers) + ")");
    }
    AvailableInterval x;
    if (!parse_seconds(fields[1], false, x.start_s) || x.start_s < 0) {
      fail("expected start_s, a number of seconds >= 0, got \"" + fields[1].substr(0, 30) + "\"");
    }
    if (!parse_seconds(fields[2], true, x.end_s) || !(x.end_s > x.start_s)) {
      fail("expected end_s, a number of seconds after start_s (or inf), got \"" +
           fields[2].substr(0, 30) + "\"");
    }
    auto& list = out[static_cast<std::size_t>(rank)];
    if (!list.empty() && x.start_s < list.back().end_s) {
      fail("rank " + std::to_string(rank) + "'s interval starts at " + fields[1] +
           " s, before its previous interval ends; list a rank's intervals in time order "
           "without overlap");
    }
    list.push_back(x);
  }
  if (in.bad()) throw ConfigError(kTracePath, file + ": cannot be read");
  return out;
}

ParticipationSpec read_participation(const nlohmann::json& document, int workers) {
  ParticipationSpec p;
  if (!document.contains("participation")) return p;
  const nlohmann::json& section = document.at("participation");
  if (!section.is_object()) {
    throw ConfigError("participation", "expected an object like {\"clients_per_round\": 4, "
                                       "\"deadline\": \"30s\"}, got " + json_brief(section));
  }
  const std::vector<ParamSpec> keys = participation_params();
  const JsonFields f(section, "participation");
  f.allow(param_names(keys));
  p.enabled = true;
  p.clients_per_round = static_cast<int>(
      declared_integer(f, param_named(keys, "clients_per_round"), workers, 1024));
  if (p.clients_per_round > workers) {
    throw ConfigError(f.path_of("clients_per_round"),
                      "expected at most training.workers (" + std::to_string(workers) +
                          ") clients per round, got " + std::to_string(p.clients_per_round));
  }
  if (f.has("deadline")) p.deadline_s = positive_duration(f, "deadline");
  if (!f.has("availability")) return p;
  const JsonFields a(f.object_at("availability"), f.path_of("availability"));
  a.allow(param_names(availability_params()));
  if (a.has("trace")) {
    for (const char* key : {"model", "mean_on", "mean_off"}) {
      if (a.has(key)) {
        throw ConfigError(a.path_of(key), "expected either a trace or a model, not both");
      }
    }
    p.availability = "trace";
    p.trace = a.string("trace", "");
    if (p.trace.empty()) throw ConfigError(a.path_of("trace"), "expected a trace file's path");
    std::string text;
    try {
      text = read_input_file(p.trace, kMaxTraceBytes, "availability trace");
    } catch (const InputFileError& e) {
      throw ConfigError(a.path_of("trace"), e.what());
    }
    std::istringstream lines(text);
    p.trace_intervals = read_availability_trace(lines, p.trace, workers);
  } else {
    p.availability = declared_string(a, param_named(availability_params(), "model"));
    p.mean_on_s = positive_duration(a, "mean_on");
    p.mean_off_s = positive_duration(a, "mean_off");
    // Each period is an interval kept in memory: periods far shorter than any round would
    // only cost memory, and no device changes its availability every microsecond.
    for (const auto& [key, seconds] :
         {std::pair{"mean_on", p.mean_on_s}, std::pair{"mean_off", p.mean_off_s}}) {
      if (seconds < kMinMeanPeriodS) {
        throw ConfigError(a.path_of(key), "expected a mean period of at least 1ms, got " +
                                              format_duration(seconds));
      }
    }
  }
  if (p.deadline_s <= 0) {
    throw ConfigError(f.path_of("deadline"),
                      "missing; expected a duration with availability: a client that goes "
                      "away mid-round would otherwise be waited for forever");
  }
  return p;
}

nlohmann::json participation_json(const ParticipationSpec& p) {
  nlohmann::json out = {{"clients_per_round", p.clients_per_round}};
  if (p.deadline_s > 0) out["deadline"] = format_duration(p.deadline_s);
  if (p.availability == "on_off") {
    out["availability"] = {{"model", "on_off"},
                           {"mean_on", format_duration(p.mean_on_s)},
                           {"mean_off", format_duration(p.mean_off_s)}};
  } else if (p.availability == "trace") {
    out["availability"] = {{"trace", p.trace}};
  }
  return out;
}

}  // namespace gradwire
