// Language-modelling data from any UTF-8 text: the text is read in full, split into words or
// characters, numbered by frequency in its training part, and cut into fixed-length sequences
// the way PyTorch's word_language_model batches PTB (non-overlapping windows, each label the
// next token of its input).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <torch/types.h>

#include "common/InputFile.h"
#include "nodes/training/Dataset.h"

namespace gradwire {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUnknown = "<unk>";
constexpr const char* kEndOfLine = "<eos>";

std::string where(const std::string& path) {
  return "text dataset: " + path;
}

/// The files to read: `path` itself, or every regular file in the folder (links followed, each
/// file read once however many names point at it, as Debian's common-licenses has GPL ->
/// GPL-3), in name order.
std::vector<fs::path> text_files(const std::string& path) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (status.type() == fs::file_type::not_found) {
    throw DatasetError(where(path) + " does not exist; dataset.path may name any UTF-8 text "
                       "file, or a folder whose files are read in name order");
  }
  if (error) throw DatasetError(where(path) + ": cannot access (" + error.message() + ")");
  if (!fs::is_directory(status)) return {fs::path(path)};
  std::vector<fs::path> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
    std::error_code ignored;
    if (entry.is_regular_file(ignored)) names.push_back(entry.path());
  }
  if (error) {
    throw DatasetError(where(path) + ": cannot list the folder (" + error.message() + ")");
  }
  std::sort(names.begin(), names.end());
  std::vector<fs::path> files;
  std::set<fs::path> seen;
  for (const fs::path& name : names) {
    std::error_code ignored;
    fs::path target = fs::canonical(name, ignored);
    if (ignored) target = name;
    if (seen.insert(target).second) files.push_back(name);
  }
  if (files.empty()) {
    throw DatasetError(where(path) + " is a folder without regular files; dataset.path may name "
                       "any UTF-8 text file, or a folder of them");
  }
  return files;
}

/// A text file is read whole; past this it is no corpus a simulated run trains on in memory.
constexpr std::uint64_t kMaxTextFileBytes = std::uint64_t{2} << 30;

std::string read_file(const fs::path& file) {
  try {
    return read_input_file(file.string(), kMaxTextFileBytes, "text file");
  } catch (const InputFileError& e) {
    throw DatasetError(where(e.what()));
  }
}

/// Length of the UTF-8 sequence starting at bytes[i], or 0 when it is not valid UTF-8
/// (truncated, a stray continuation byte, an overlong form, a surrogate, or above U+10FFFF).
std::size_t utf8_length(const std::string& bytes, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;  // the second byte's range, narrowed to exclude the invalid forms
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > bytes.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

std::string hex(char c) {
  static const char* digits = "0123456789abcdef";
  const auto b = static_cast<unsigned char>(c);
  return {digits[b >> 4], digits[b & 15]};
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/// Numbers units in order of first appearance; the stream holds these provisional ids.
class Numbering {
 public:
  std::int64_t id(const std::string& unit) {
    const auto [it, added] = ids_.emplace(unit, static_cast<std::int64_t>(units_.size()));
    if (added) units_.push_back(unit);
    return it->second;
  }
  const std::vector<std::string>& units() const { return units_; }

 private:
  std::unordered_map<std::string, std::int64_t> ids_;
  std::vector<std::string> units_;
};

/// Appends the units of one file's text (already checked to be UTF-8) to `stream`.
void tokenize(const std::string& text, bool words, Numbering& numbering,
              std::vector<std::int64_t>& stream) {
  std::size_t i = 0;
  // A byte-order mark is an encoding signature, not text.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;
  if (!words) {
    while (i < text.size()) {
      const std::size_t length = utf8_length(text, i);
      stream.push_back(numbering.id(text.substr(i, length)));
      i += length;
    }
    return;
  }
  const std::int64_t end_of_line = numbering.id(kEndOfLine);
  bool line_has_words = false;
  std::string word;
  const auto end_word = [&] {
    if (word.empty()) return;
    stream.push_back(numbering.id(word));
    word.clear();
    line_has_words = true;
  };
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (is_space(c)) {
      end_word();
      if (c == '\n' && line_has_words) {
        stream.push_back(end_of_line);
        line_has_words = false;
      }
    } else {
      word.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
  }
  end_word();
  if (line_has_words) stream.push_back(end_of_line);  // a last line without its newline
}

/// Non-overlapping windows of bptt + 1 tokens, stride bptt: inputs and their next tokens.
Dataset sequences(const std::vector<std::int64_t>& ids, std::int64_t bptt,
                  const std::vector<std::string>& vocabulary) {
  const auto count = (static_cast<std::int64_t>(ids.size()) - 1) / bptt;
  const torch::Tensor all = torch::tensor(ids, torch::kLong);
  Dataset d;
  d.inputs = all.narrow(0, 0, count * bptt).view({count, bptt}).clone();
  d.labels = all.narrow(0, 1, count * bptt).view({count, bptt}).clone();
  d.classes = static_cast<std::int64_t>(vocabulary.size());
  d.sample_shape = {bptt};
  d.tokens = true;
  d.vocabulary = vocabulary;
  return d;
}

}  // namespace

DatasetSplit load_text(const TextConfig& config) {
  const bool words = config.unit == "word";
  if (!words && config.unit != "char") {
    throw std::invalid_argument("text dataset: unit must be \"word\" or \"char\", got \"" +
                                config.unit + "\"");
  }
  const std::int64_t specials = words ? 2 : 1;
  if (config.bptt < 1) throw std::invalid_argument("text dataset: bptt must be at least 1");
  if (config.vocab < specials + 1) {
    throw std::invalid_argument("text dataset: vocab must be at least " +
                                std::to_string(specials + 1) + " (" + kUnknown +
                                (words ? std::string(", ") + kEndOfLine : std::string()) +
                                " and one " + config.unit + ")");
  }
  if (!(config.test_fraction > 0 && config.test_fraction < 1)) {
    throw std::invalid_argument("text dataset: test_fraction must be between 0 and 1");
  }

  Numbering numbering;
  numbering.id(kUnknown);
  if (words) numbering.id(kEndOfLine);
  std::vector<std::int64_t> stream;
  for (const fs::path& file : text_files(config.path)) {
    const std::string text = read_file(file);
    for (std::size_t i = 0; i < text.size();) {
      const std::size_t length = utf8_length(text, i);
      if (length == 0) {
        throw DatasetError(where(file.string()) + " is not UTF-8 text: invalid byte 0x" +
                           hex(text[i]) + " at byte offset " + std::to_string(i));
      }
      i += length;
    }
    tokenize(text, words, numbering, stream);
  }

  const auto total = static_cast<std::int64_t>(stream.size());
  const auto train_tokens =
      static_cast<std::int64_t>(static_cast<double>(total) * (1 - config.test_fraction));
  const std::int64_t needed = config.bptt + 1;
  if (train_tokens < needed || total - train_tokens < needed) {
    throw DatasetError(where(config.path) + " has too little text: " + std::to_string(total) +
                       " " + config.unit + " tokens, " + std::to_string(train_tokens) +
                       " for training and " + std::to_string(total - train_tokens) +
                       " for testing; each part needs at least bptt + 1 = " +
                       std::to_string(needed) + " tokens for one sequence");
  }

  // The vocabulary: the specials, then the training part's units by descending count; the
  // provisional ids are in order of first appearance, so a stable sort breaks ties by it.
  const std::vector<std::string>& units = numbering.units();
  std::vector<std::int64_t> counts(units.size(), 0);
  for (std::int64_t i = 0; i < train_tokens; ++i) ++counts[static_cast<std::size_t>(stream[i])];
  std::vector<std::int64_t> ranked;
  for (std::int64_t id = specials; id < static_cast<std::int64_t>(units.size()); ++id) {
    if (counts[static_cast<std::size_t>(id)] > 0) ranked.push_back(id);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](std::int64_t a, std::int64_t b) {
    return counts[static_cast<std::size_t>(a)] > counts[static_cast<std::size_t>(b)];
  });
  ranked.resize(std::min<std::size_t>(ranked.size(),
                                      static_cast<std::size_t>(config.vocab - specials)));
  std::vector<std::int64_t> final_id(units.size(), 0);  // everything else becomes <unk>
  std::vector<std::string> vocabulary(units.begin(), units.begin() + specials);
  for (std::int64_t id = 0; id < specials; ++id) final_id[static_cast<std::size_t>(id)] = id;
  for (std::int64_t id : ranked) {
    final_id[static_cast<std::size_t>(id)] = static_cast<std::int64_t>(vocabulary.size());
    vocabulary.push_back(units[static_cast<std::size_t>(id)]);
  }
  for (std::int64_t& id : stream) id = final_id[static_cast<std::size_t>(id)];

  const std::vector<std::int64_t> train(stream.begin(), stream.begin() + train_tokens);
  const std::vector<std::int64_t> test(stream.begin() + train_tokens, stream.end());
  return DatasetSplit{sequences(train, config.bptt, vocabulary),
                      sequences(test, config.bptt, vocabulary)};
}

}  // namespace gradwire
