#include "codecs/CodecKind.h"

namespace gradwire {

UntypedCodecKind::UntypedCodecKind(std::string name, std::string summary, FieldList keys,
                                   OptionsType type, Make make)
    : name_(std::move(name)),
      summary_(std::move(summary)),
      keys_(std::move(keys)),
      type_(type),
      make_(std::move(make)) {}

CodecInfo UntypedCodecKind::info() const {
  CodecInfo info;
  info.name = name_;
  info.summary = summary_;
  info.params = keys_.params();
  info.multi_round = multi_round_;
  info.own_error_feedback = own_error_feedback_;
  info.error_feedback_default = error_feedback_default_;
  // The registry's keys, read into the options where the factory asks for them: false when
  // absent, as the registry's own reading of them.
  const ParamSpec ef_key = params::boolean(CodecRegistry::kErrorFeedbackKey, false, "");
  const ParamSpec zstd_key = params::boolean(CodecRegistry::kZstdKey, false, "");
  const auto read = [keys = keys_, type = type_, ef = error_feedback_, zstd = zstd_, ef_key,
                     zstd_key](const nlohmann::json& resolved, const std::string& path) {
    const JsonFields fields(resolved, path);
    std::any options = type.fresh();
    void* place = type.place(options);
    keys.read(fields, place);
    if (ef) ef->read(fields, ef_key, place);
    if (zstd) zstd->read(fields, zstd_key, place);
    return options;
  };
  info.read = read;
  info.write = [keys = keys_, type = type_](const std::any& options, nlohmann::json& out) {
    keys.write(type.const_place(options), out);
  };
  // The paths of errors the keys find when the codec is made are those of the scenario's
  // `codec` object, as the registry's create resolves it.
  info.make = [read, make = make_](const nlohmann::json& resolved, const CodecContext& ctx) {
    return make(read(resolved, "codec"), ctx);
  };
  return info;
}

}  // namespace gradwire
