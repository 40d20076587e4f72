#include "sim/cli/EmulateCommand.h"

#include <cmath>
#include <cstdlib>
#include <ostream>
#include <utility>

#include "common/ConfigError.h"
#include "sim/cli/Cli.h"
#include "sim/cli/OptionChecks.h"
#include "sim/emulate/CommandRunner.h"
#include "sim/emulate/Emulation.h"
#include "sim/emulate/EmulationPrivileges.h"
#include "sim/emulate/EmulationError.h"
#include "sim/emulate/StaleEmulations.h"
#include "sim/engine/ScenarioLoader.h"

namespace gradwire {

namespace {

double number_of(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(value)) {
    throw ConfigError(option, "expected a finite number; got \"" + text + "\"");
  }
  return value;
}

struct ParsedEmulate {
  std::string file;
  std::vector<std::string> overrides;
  EmulationOptions options;
  bool help = false;
  bool clean = false;
};

ParsedEmulate parse(const std::vector<std::string>& args) {
  ParsedEmulate p;
  p.options.max_lag_s = kDefaultMaxLagMs / 1e3;
  std::size_t i = 0;
  const auto value = [&](const std::string& option) -> const std::string& {
    if (i + 1 >= args.size()) throw ConfigError(option, "expected a value");
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      // Empty after a last --host command's `--`; check_emulation_commands says when a
      // default command is needed.
      p.options.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    }
    if (a == "--help" || a == "-h") {
      p.help = true;
    } else if (a == "--out") {
      p.options.out_dir = value(a);
    } else if (a == "--set") {
      p.overrides.push_back(value(a));
    } else if (a == "--max-lag") {
      p.options.max_lag_s = checked_duration(a, number_of(a, value(a)), 1e-3);
    } else if (a == "--timeout") {
      p.options.timeout_s = checked_duration(a, number_of(a, value(a)));
    } else if (a == "--master-port") {
      const double port = number_of(a, value(a));
      if (port < 1 || port > 65535 || port != static_cast<int>(port)) {
        throw ConfigError(a, "expected a port in [1, 65535]");
      }
      p.options.master_port = static_cast<int>(port);
    } else if (a == "--congestion-control") {
      p.options.congestion_control = value(a);
    } else if (a == "--clean") {
      p.clean = true;
    } else if (a == "--quiet" || a == "-q") {
      p.options.quiet = true;
    } else if (a == "--host") {
      const double host = number_of(a, value(a));
      if (host < 0 || host != static_cast<double>(static_cast<long>(host))) {
        throw ConfigError(a, "expected a host index >= 0");
      }
      if (i + 1 >= args.size() || args[i + 1] != "--") {
        throw ConfigError("--host", "expected `--host N -- COMMAND ARGS... --`");
      }
      i += 2;
      std::vector<std::string> command;
      while (i < args.size() && args[i] != "--") command.push_back(args[i++]);
      if (command.empty()) throw ConfigError("--host", "expected a command after --");
      p.options.host_commands[static_cast<std::size_t>(host)] = command;
      // The `--` that ends a host's command starts the default command, unless another
      // option follows it (`--host 0 -- A -- --host 1 -- B -- C`).
      if (i + 1 < args.size() && args[i + 1].rfind("--", 0) == 0 && args[i + 1] != "--") {
        continue;  // the loop's ++i steps over the `--`
      }
      --i;  // back onto the `--` (or the end): the loop's next round takes the default command
    } else if (!a.empty() && a[0] == '-') {
      throw ConfigError(a, "unknown option (see gradwire emulate --help)");
    } else if (p.file.empty()) {
      p.file = a;
    } else {
      throw ConfigError(a, "unexpected argument; the command goes after `--`");
    }
  }
  return p;
}

}  // namespace

Scenario load_emulation_scenario(nlohmann::json document) {
  if (document.is_object() && !document.contains("dataset") && !document.contains("model")) {
    document["dataset"] = {{"kind", "synthetic"}};
    document["model"] = {{"kind", "mlp"}};
  }
  return load_scenario(document);
}

std::string emulate_usage() {
  return "Usage: gradwire emulate SCENARIO [OPTIONS] [--host N -- COMMAND ARGS...] -- COMMAND ARGS...\n"
         "\n"
         "Runs COMMAND once per host of the scenario's network (training.workers hosts), each in\n"
         "its own network namespace whose TAP device is joined to that host's ns-3 node; ns-3 runs\n"
         "in real time. {rank} {world} {addr} {master_addr} {addr:N} (host N's address) in COMMAND\n"
         "are replaced, and RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT and\n"
         "GLOO_SOCKET_IFNAME are set. Output lines carry their host ([h0] ...). Needs root\n"
         "(CAP_NET_ADMIN and CAP_SYS_ADMIN). Details: docs/emulate.md.\n"
         "\n"
         "Options:\n"
         "  --out DIR          parent of the run folder <name>-emulate (default: output.dir)\n"
         "  --set KEY=VALUE    override a scenario value (repeatable)\n"
         "  --max-lag MS       stop when ns-3 falls this far behind the wall clock (default " +
         std::to_string(static_cast<int>(kDefaultMaxLagMs)) + ")\n"
         "  --timeout S        stop the commands after S seconds (exit 124; default: none)\n"
         "  --master-port P    MASTER_PORT (default 29500)\n"
         "  --congestion-control NAME\n"
         "                     the hosts' TCP congestion control (default cubic, the\n"
         "                     simulator's, where this machine lets a namespace choose it)\n"
         "  --host N -- CMD    host N runs CMD instead (CMD ends at the next --)\n"
         "  --quiet, -q        no progress lines from the emulator\n"
         "  --clean            only remove what emulators that no longer run left (their\n"
         "                     namespaces, TAPs and the processes inside), say what, exit 0;\n"
         "                     every run does this first (usage: gradwire emulate --clean)\n"
         "\n"
         "Output lines longer than " + std::to_string(kMaxOutputLineBytes / 1024) +
         " KiB are cut: the rest is dropped and counted (\"[... N bytes cut]\").\n"
         "\n"
         "Exit status: the first failing command's; 124 after --timeout; 3 when ns-3 fell\n"
         "behind --max-lag; 2 for bad input or missing privileges; 128+N on signal N.\n";
}

int run_emulate_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  ParsedEmulate parsed;
  try {
    parsed = parse(args);
    if (parsed.help) {
      out << emulate_usage();
      return kExitOk;
    }
    if (parsed.clean) {
      if (!parsed.file.empty() || !parsed.options.command.empty() ||
          !parsed.options.host_commands.empty()) {
        throw ConfigError("--clean", "takes no scenario or command (gradwire emulate --clean)");
      }
      const std::string missing = missing_emulation_privileges();
      if (!missing.empty()) {
        err << "error: " << missing << "\n";
        return kExitBadInput;
      }
      const std::vector<StaleEmulation> removed = remove_stale_emulations();
      report_stale_emulations(removed, err);
      if (removed.empty()) err << "emulate: nothing left by emulators that no longer run\n";
      return kExitOk;
    }
    if (parsed.file.empty()) throw ConfigError("SCENARIO", "expected a scenario file");
    nlohmann::json doc = read_scenario_file(parsed.file);
    apply_overrides(doc, parsed.overrides);
    const Scenario scenario = load_emulation_scenario(std::move(doc));
    check_emulation_commands(scenario, parsed.options);
    // Refused before anything is made.
    const std::string missing = missing_emulation_privileges();
    if (!missing.empty()) {
      err << "error: " << missing << "\n";
      return kExitBadInput;
    }
    const EmulationResult result = run_emulation(scenario, parsed.options, out, err);
    return result.exit_code;
  } catch (const ConfigError& e) {
    err << "error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const EmulationError& e) {
    err << "error: emulate: " << e.what() << " (everything made so far was removed)\n";
    return kExitFailure;
  } catch (const std::exception& e) {
    err << "error: " << e.what() << "\n";
    return kExitFailure;
  }
}

}  // namespace gradwire
