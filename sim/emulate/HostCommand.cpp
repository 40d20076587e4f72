#include "sim/emulate/HostCommand.h"

namespace gradwire {

std::vector<std::string> substitute_placeholders(const std::vector<std::string>& words,
                                                 const std::map<std::string, std::string>& values) {
  std::vector<std::string> result;
  result.reserve(words.size());
  for (const std::string& word : words) {
    std::string out;
    std::size_t i = 0;
    while (i < word.size()) {
      bool replaced = false;
      if (word[i] == '{') {
        const std::size_t close = word.find('}', i);
        if (close != std::string::npos) {
          const auto it = values.find(word.substr(i + 1, close - i - 1));
          if (it != values.end()) {
            out += it->second;
            i = close + 1;
            replaced = true;
          }
        }
      }
      if (!replaced) out += word[i++];
    }
    result.push_back(std::move(out));
  }
  return result;
}

}  // namespace gradwire
