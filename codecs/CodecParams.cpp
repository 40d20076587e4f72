#include "codecs/CodecParams.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/DeclaredFields.h"
#include "common/JsonFields.h"

namespace gradwire {

std::pair<FieldList::Reader, FieldList::Writer> choice_binding(const ParamSpec& spec,
                                                              FieldList::Member member,
                                                              std::size_t size,
                                                              std::vector<unsigned char> meanings) {
  if (spec.choices.size() * size != meanings.size()) {
    throw std::logic_error("key '" + spec.name + "' declares " +
                           std::to_string(spec.choices.size()) + " choices but binds " +
                           std::to_string(meanings.size() / size));
  }
  FieldList::Reader read = [member, size, meanings](const JsonFields& f, const ParamSpec& s,
                                                    void* config) {
    const std::string name = declared_string(f, s);
    for (std::size_t i = 0; i < s.choices.size(); ++i) {
      if (s.choices[i] == name) std::memcpy(member.place(config), meanings.data() + i * size, size);
    }
  };
  FieldList::Writer write = [member, size, meanings](const void* config, const ParamSpec& s,
                                                     nlohmann::json& out) {
    for (std::size_t i = 0; i * size < meanings.size(); ++i) {
      if (std::memcmp(meanings.data() + i * size, member.place(config), size) == 0) {
        out[s.name] = s.choices[i];
        return;
      }
    }
    throw std::logic_error("key '" + s.name + "' holds a value no choice stands for");
  };
  return {std::move(read), std::move(write)};
}

std::pair<FieldList::Reader, FieldList::Writer> codec_binding(FieldList::Member member) {
  FieldList::Reader read = [member](const JsonFields& f, const ParamSpec& s, void* config) {
    *static_cast<nlohmann::json*>(member.place(config)) = f.object_at(s.name);
  };
  FieldList::Writer write = [member](const void* config, const ParamSpec& s,
                                     nlohmann::json& out) {
    out[s.name] = *static_cast<const nlohmann::json*>(member.place(config));
  };
  return {std::move(read), std::move(write)};
}

}  // namespace gradwire
