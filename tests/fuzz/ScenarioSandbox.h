// What the scenario and sweep fuzz targets share: JSON from the fuzzer's bytes, and a sandbox
// for the paths a scenario names.
//
// Loading a scenario stats dataset folders and reads text datasets and TorchScript files. A
// fuzzer that spelled "/" or "/dev/stdin" would make a target read the machine's files, hang
// on a device or depend on what the machine holds, so documents naming an absolute path or
// ".." are skipped, and relative paths resolve in a folder of the target's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "common/JsonFields.h"

namespace gradwire::fuzz {

/// The document the bytes spell, or nothing when they are not JSON (parse_json's documented
/// errors) or when it names a path outside the sandbox. The top-level key `exempt`, when
/// given, is left for the caller to check.
inline std::optional<nlohmann::json> sandboxed_document(const std::uint8_t* data, std::size_t size,
                                                        const char* exempt = nullptr) {
  nlohmann::json document;
  try {
    document = parse_json(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const JsonSyntaxError&) {
    return std::nullopt;
  } catch (const JsonTooDeep&) {
    return std::nullopt;
  }
  bool outside = false;
  const auto visit = [&outside](const auto& self, const nlohmann::json& value) -> void {
    if (value.is_string()) {
      const std::string& text = value.get_ref<const std::string&>();
      outside = outside || (!text.empty() && text[0] == '/') || text.find("..") != std::string::npos;
    } else if (value.is_structured()) {
      for (const auto& item : value) self(self, item);
    }
  };
  if (exempt != nullptr && document.is_object()) {
    for (auto it = document.begin(); it != document.end(); ++it) {
      if (it.key() != exempt) visit(visit, it.value());
    }
  } else {
    visit(visit, document);
  }
  if (outside) return std::nullopt;
  return document;
}

/// Moves the process into a new folder, removed at exit, holding one small text dataset,
/// words.txt. Called from LLVMFuzzerInitialize, before libFuzzer reads its arguments: the
/// relative paths among them (corpus folders, inputs, -dict=, -artifact_prefix=, ...) are made
/// absolute first, so they still name what they named.
inline void enter_sandbox(int* argc, char*** argv) {
  namespace fs = std::filesystem;
  static std::vector<std::string> arguments;
  static std::vector<char*> pointers;
  const fs::path start = fs::current_path();
  const auto absolute = [&start](const std::string& path) {
    return path.empty() || path[0] == '/' ? path : (start / path).string();
  };
  for (int i = 0; i < *argc; ++i) {
    std::string arg = (*argv)[i];
    const auto eq = arg.find('=');
    if (i == 0 || arg.rfind("--", 0) == 0) {
      // the program, and arguments libFuzzer ignores
    } else if (arg[0] != '-') {
      arg = absolute(arg);
    } else if (eq != std::string::npos) {
      const std::string flag = arg.substr(1, eq - 1);
      for (const char* path_flag : {"dict", "artifact_prefix", "exact_artifact_path",
                                    "merge_control_file", "features_dir", "stop_file"}) {
        if (flag == path_flag) arg = arg.substr(0, eq + 1) + absolute(arg.substr(eq + 1));
      }
    }
    arguments.push_back(arg);
  }
  for (std::string& arg : arguments) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  *argv = pointers.data();

  static fs::path folder;
  std::string pattern = (fs::temp_directory_path() / "gradwire-fuzz-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) std::abort();
  folder = pattern;
  fs::current_path(folder);
  std::ofstream words("words.txt");
  for (int line = 0; line < 20; ++line) words << "the cat sat on the mat and the dog sat on the log\n";
  std::atexit([] {
    std::error_code ignored;
    fs::remove_all(folder, ignored);
  });
}

}  // namespace gradwire::fuzz
