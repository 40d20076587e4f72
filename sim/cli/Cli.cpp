#include "sim/cli/Cli.h"

#include <functional>
#include <ostream>

#include <CLI/CLI.hpp>

#include "codecs/CodecRegistry.h"
#include "common/AtomicOutput.h"
#include "common/ConfigError.h"
#include "common/InterruptCleanup.h"
#include "common/ParamSpec.h"
#include "netmodels/NetworkRegistry.h"
#include "nodes/schemes/SchemeRegistry.h"
#include "nodes/training/DatasetRegistry.h"
#include "nodes/training/ModelRegistry.h"
#include "sim/cli/CodecCommand.h"
#include "sim/cli/EmulateCommand.h"
#include "sim/cli/ServiceCommands.h"
#include "sim/cli/AdviseCommand.h"
#include "sim/cli/StudyCommands.h"
#include "sim/engine/ComputeTime.h"
#include "sim/engine/Engine.h"
#include "sim/engine/StepTrace.h"
#include "sim/engine/StepTraceFile.h"
#include "sim/engine/ScenarioLoader.h"
#include "sim/service/ProcessRun.h"
#include "sim/study/NetworkLabel.h"

namespace gradwire {

namespace {

Scenario load(const std::string& file, const std::vector<std::string>& overrides) {
  nlohmann::json doc = read_scenario_file(file);
  apply_overrides(doc, overrides);
  return load_scenario(doc);
}

std::string param_type(const CodecParam& p) {
  return p.type == CodecParam::Type::kNested ? "codec object" : p.type_name();
}

/// Whether the codec, built with its defaults, encodes a GPU gradient where it lives
/// (CodecTraits::encodes_on_device) rather than reading a host copy.
bool encodes_on_device(const CodecInfo& info) {
  CodecContext context;
  context.numel = 1024;
  context.workers = 2;
  try {
    const nlohmann::json spec = CodecRegistry::builtin().resolve({{"kind", info.name}}, "codec");
    return info.make(spec, context)->traits().encodes_on_device;
  } catch (const std::exception&) {
    return false;  // a codec that cannot be built without a model's layout copies to the host
  }
}

void list_codecs(std::ostream& out, bool as_json) {
  nlohmann::json all = nlohmann::json::array();
  for (const CodecInfo& info : CodecRegistry::builtin().list()) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : info.params) {
      params.push_back({{"name", p.name}, {"type", param_type(p)},
                        {"default", p.default_value}, {"help", p.help}});
    }
    all.push_back({{"kind", info.name}, {"summary", info.summary}, {"params", params},
                   {"encodes_on_device", encodes_on_device(info)}});
  }
  if (as_json) {
    out << all.dump(2) << "\n";
    return;
  }
  for (const auto& c : all) {
    out << c["kind"].get<std::string>() << "  -  " << c["summary"].get<std::string>()
        << (c["encodes_on_device"].get<bool>() ? " [GPU: encodes on the device]"
                                               : " [GPU: encodes a host copy]")
        << "\n";
    for (const auto& p : c["params"]) {
      out << "    " << p["name"].get<std::string>() << " (" << p["type"].get<std::string>()
          << ", default " << p["default"].dump() << "): " << p["help"].get<std::string>() << "\n";
    }
  }
  out << "Every codec also takes error_feedback (bool, default false): accumulate what was not "
         "sent and add it to the next gradient.\n"
         "With compute.device cuda, a codec marked 'encodes on the device' reads the gradient "
         "on the GPU and only its payload crosses to the host; the others read a host copy of "
         "the gradient.\n";
}

/// A kind's keys, one per line, as every listing prints them.
void print_params(std::ostream& out, const std::vector<ParamSpec>& params) {
  for (const auto& p : params) {
    out << "    " << p.name << " (" << p.type_name() << ", default " << p.default_shown()
        << "): " << p.help << "\n";
  }
}

void list_schemes(std::ostream& out) {
  const SchemeRegistry& registry = SchemeRegistry::builtin();
  out << "Every topology takes:\n";
  print_params(out, registry.common_params());
  for (const auto& s : registry.list()) {
    std::string modes;
    for (SyncMode m : s.modes) modes += (modes.empty() ? "" : ", ") + mode_name(m);
    out << s.name << "  -  " << s.summary << " [modes: " << modes
        << (s.sends_gradients ? "" : "; codec none only") << (s.faults_sync ? "; faults" : "")
        << (s.processes ? "; --processes" : "") << "]\n";
    print_params(out, s.params);
  }
}

void list_models(std::ostream& out) {
  for (const auto& m : ModelRegistry::builtin().list()) {
    out << m.name << "  -  " << m.summary << " [" << model_data_text(m.data) << "]\n";
    print_params(out, m.params);
  }
}

void list_datasets(std::ostream& out) {
  const DatasetRegistry& registry = DatasetRegistry::builtin();
  out << "Every dataset takes:\n";
  print_params(out, registry.common_params());
  for (const auto& d : registry.list()) {
    out << d.name << "  -  " << d.summary << "\n";
    print_params(out, d.params);
  }
}

/// The device profiles `compute.profile` names: speed, power and where the numbers come from.
void list_devices(std::ostream& out, bool json) {
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : device_profiles()) {
      list.push_back({{"name", p.name},
                      {"sustained_flops", p.sustained_flops},
                      {"step_overhead_s", p.step_overhead_s},
                      {"memory_bandwidth", p.memory_bandwidth},
                      {"source", p.source},
                      {"busy_watts", p.busy_watts},
                      {"idle_watts", p.idle_watts},
                      {"power_source", p.power_source}});
    }
    out << list.dump(2) << "\n";
    return;
  }
  for (const auto& p : device_profiles()) {
    out << p.name << "  -  " << p.source << "\n"
        << "    sustained " << p.sustained_flops << " FLOP/s, " << p.step_overhead_s * 1e3
        << " ms per step, memory " << p.memory_bandwidth << " B/s\n"
        << "    power: busy " << p.busy_watts << " W, idle " << p.idle_watts << " W ("
        << p.power_source << ")\n";
  }
}

/// A `--json` / `--markdown` pair of flags on a listing command.
struct ListingFormat {
  bool json = false;
  bool markdown = false;
  void add_to(CLI::App* command, const std::string& markdown_file) {
    command->add_flag("--json", json, "machine-readable output");
    command->add_flag("--markdown", markdown, "the reference as " + markdown_file + " carries it");
  }
  /// Prints the listing in the form asked for: JSON, the docs' Markdown, or the plain list.
  void print(std::ostream& out, const nlohmann::json& reference_json,
             const std::string& reference_markdown,
             const std::function<void(std::ostream&)>& plain) const {
    if (json) {
      out << reference_json.dump(2) << "\n";
    } else if (markdown) {
      out << reference_markdown;
    } else {
      plain(out);
    }
  }
};

}  // namespace

int run_cli(int argc, char** argv, std::ostream& out, std::ostream& err) {
  CLI::App app{"gradwire: distributed deep learning over simulated networks (LibTorch + ns-3)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "gradwire 0.1");

  std::string file;
  std::string out_dir;
  std::vector<std::string> overrides;
  bool quiet = false;
  CLI::App* run = app.add_subcommand("run", "Run a scenario and write runs/<name>/");
  run->add_option("file", file, "scenario JSON file")->required();
  run->add_option("--out", out_dir, "parent folder for the run folder (default: output.dir)");
  run->add_option("--set", overrides, "override a scenario value: path.to.key=value (repeatable)");
  run->add_flag("--quiet,-q", quiet, "no progress lines on stderr");
  bool record_trace = false;
  run->add_flag("--trace", record_trace,
                "also write the run's step trace (trace/steps.gwtrace), from which the same "
                "training replays over other networks (--replay)");
  std::string replay_path;
  run->add_option("--replay", replay_path,
                  "replay the training of this step trace (a file, or a run folder recorded "
                  "with --trace) over this scenario's network instead of training again");
  bool processes = false;
  run->add_flag("--processes", processes,
                "one `gradwire worker` process per worker (and server), the network served to "
                "them over ZeroMQ on loopback; same results as in-process");

  std::string validate_file;
  std::vector<std::string> validate_overrides;
  CLI::App* validate = app.add_subcommand("validate", "Check a scenario without running it");
  validate->add_option("file", validate_file, "scenario JSON file")->required();
  validate->add_option("--set", validate_overrides, "override a value: path.to.key=value");
  bool print_resolved = false;
  validate->add_flag("--print", print_resolved, "print the resolved scenario (defaults filled in)");

  bool codecs_json = false;
  CLI::App* codecs = app.add_subcommand("codecs", "List codecs and their parameters");
  codecs->add_flag("--json", codecs_json, "machine-readable output");

  ListingFormat networks_format;
  CLI::App* networks =
      app.add_subcommand("networks", "List network families and their keys (scenario `network`)");
  networks_format.add_to(networks, "docs/networks.md");
  ListingFormat models_format;
  CLI::App* models =
      app.add_subcommand("models", "List model kinds and their keys (scenario `model`)");
  models_format.add_to(models, "docs/models.md");
  ListingFormat datasets_format;
  CLI::App* datasets =
      app.add_subcommand("datasets", "List dataset kinds and their keys (scenario `dataset`)");
  datasets_format.add_to(datasets, "docs/models.md");
  ListingFormat schemes_format;
  CLI::App* schemes = app.add_subcommand(
      "schemes", "List training schemes and their keys (scenario `topology`)");
  schemes_format.add_to(schemes, "docs/schemes.md");

  bool devices_json = false;
  CLI::App* devices = app.add_subcommand(
      "devices", "List device profiles (scenario `compute.profile`): speed and power");
  devices->add_flag("--json", devices_json, "machine-readable output");

  CodecCommandOptions codec_options;
  CLI::App* codec_command = add_codec_command(app, codec_options);

  SweepCommandOptions sweep_options;
  CLI::App* sweep_command = add_sweep_command(app, sweep_options);
  ReportCommandOptions report_options;
  CLI::App* report_command = add_report_command(app, report_options);
  AdviseCommandOptions advise_options;
  CLI::App* advise_command = add_advise_command(app, advise_options);

  // Listed here for --help; its arguments are read by run_emulate_command (commands carry
  // options of their own, which CLI11 would take for gradwire's).
  app.add_subcommand("emulate",
                     "Run a program once per host in network namespaces over the scenario's "
                     "network in real time (see gradwire emulate --help)");
  if (argc >= 2 && std::string(argv[1]) == "emulate") {
    return run_emulate_command(std::vector<std::string>(argv + 2, argv + argc), out, err);
  }

  ServeCommandOptions serve_options;
  CLI::App* serve_command = add_serve_command(app, serve_options);
  WorkerProcessOptions worker_options;
  CLI::App* worker_command = add_worker_command(app, worker_options);
  KeygenCommandOptions keygen_options;
  CLI::App* keygen_command = add_keygen_command(app, keygen_options);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitBadInput;
  }

  try {
    if (*run) {
      Scenario scenario = load(file, overrides);
      const std::string parent = out_dir.empty() ? scenario.output_dir : out_dir;
      const std::string problem = prepare_output_parent(parent);
      if (!problem.empty()) {
        throw ConfigError(out_dir.empty() ? "output.dir" : "--out",
                          "expected a folder where run folders can be made; " + parent + ": " +
                              problem);
      }
      // Once the run folder is in place the run has succeeded: a late SIGINT is not exit 130.
      InterruptCleanup::finish_with_commit();
      if (processes && (record_trace || !replay_path.empty())) {
        throw ConfigError(record_trace ? "--trace" : "--replay",
                          "step traces are recorded and replayed in-process only, not with "
                          "--processes");
      }
      if (processes) {
        RunResult result = run_with_processes(scenario, parent, quiet ? nullptr : &err, err);
        out << "results: " << result.directory << "\n";
        return kExitOk;
      }
      TraceOptions trace;
      trace.record = record_trace;
      if (!replay_path.empty()) {
        try {
          trace.replay = std::make_shared<StepTrace>(read_step_trace(replay_path));
        } catch (const StepTraceError& e) {
          throw ConfigError("--replay", e.what());
        }
        trace.replay_source = step_trace_path(replay_path);
      }
      Engine engine(scenario, trace);
      RunResult result = engine.run(parent, quiet ? nullptr : &err);
      out << "results: " << result.directory << "\n";
      return kExitOk;
    }
    if (*validate) {
      Scenario scenario = load(validate_file, validate_overrides);
      if (print_resolved) {
        out << scenario.resolved.dump(2) << "\n";
      } else {
        out << validate_file << ": ok (" << scenario.training.workers << " workers, "
            << scenario.training.steps << " steps, codec "
            << scenario.codec.at("kind").get<std::string>() << ", " << scenario.topology.name()
            << ") on " << network_label(scenario.network.to_json(), scenario.training.workers)
            << "\n";
      }
      return kExitOk;
    }
    if (*codec_command) return run_codec_command(codec_options, out, err);
    if (*sweep_command) return run_sweep_command(sweep_options, out, err);
    if (*report_command) return run_report_command(report_options, out, err);
    if (*serve_command) return run_serve_command(serve_options, out, err);
    if (*worker_command) return run_worker_process(worker_options, err);
    if (*keygen_command) return run_keygen_command(keygen_options, out);
    if (*advise_command) return run_advise_command(advise_options, out, err);
    if (*codecs) {
      list_codecs(out, codecs_json);
      return kExitOk;
    }
    if (*devices) {
      list_devices(out, devices_json);
      return kExitOk;
    }
    if (*networks) {
      if (networks_format.json) {
        out << network_reference_json().dump(2) << "\n";
      } else {
        out << network_reference_markdown();
      }
      return kExitOk;
    }
    if (*models) {
      models_format.print(out, model_reference_json(), model_reference_markdown(), list_models);
      return kExitOk;
    }
    if (*datasets) {
      datasets_format.print(out, dataset_reference_json(), dataset_reference_markdown(), list_datasets);
      return kExitOk;
    }
    if (*schemes) {
      schemes_format.print(out, scheme_reference_json(), scheme_reference_markdown(), list_schemes);
      return kExitOk;
    }
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return kExitFailure;
  }
  return kExitFailure;
}

}  // namespace gradwire
