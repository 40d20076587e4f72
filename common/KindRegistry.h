// The one shape every registry of configurable kinds takes (codecs, network families, training
// schemes, models, datasets). A kind is declared once, as an `Info` deriving from
// `KindDeclaration`: its name, a one-line summary, its keys as ParamSpecs, and whatever the
// registry's layer needs to resolve and make it (function members of the `Info`). Validation,
// the `gradwire codecs|networks|schemes|models|datasets` listings and the docs' key tables are
// all read from these declarations.
//
// Adding a kind is one new file that returns its `Info`, plus one `add` line in the registry's
// builtin list (its constructor). Each registry is `KindRegistry<Info>` plus
// `BuiltinKinds<itself>`, which gives it `builtin()`; tests register kinds of their own through
// `extend()` before anything reads the registry, and remove them with `remove()` when done.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/ConfigError.h"
#include "common/JsonFields.h"
#include "common/ParamSpec.h"

namespace gradwire {

/// What every declared kind has.
struct KindDeclaration {
  std::string name;     ///< what the scenario names it by (`kind`, `family`)
  std::string summary;  ///< one line for listings and docs
  std::vector<ParamSpec> params;  ///< keys of its own, besides the selector
};

template <typename Info>
class KindRegistry {
 public:
  /// std::logic_error when a kind of that name is already declared (a bug).
  void add(Info info) {
    if (find(info.name) != nullptr) {
      throw std::logic_error("kind '" + info.name + "' declared twice");
    }
    kinds_.push_back(std::move(info));
  }
  /// Removes a kind (tests that registered one of their own); false when there is none.
  bool remove(const std::string& name) {
    const auto it = std::find_if(kinds_.begin(), kinds_.end(),
                                 [&name](const Info& k) { return k.name == name; });
    if (it == kinds_.end()) return false;
    kinds_.erase(it);
    return true;
  }
  /// nullptr when no kind has that name.
  const Info* find(const std::string& name) const {
    for (const auto& k : kinds_) {
      if (k.name == name) return &k;
    }
    return nullptr;
  }
  /// std::logic_error when no kind has that name: callers hold names the registry gave them.
  const Info& at(const std::string& name) const {
    const Info* k = find(name);
    if (k == nullptr) throw std::logic_error("kind '" + name + "' is not declared");
    return *k;
  }
  /// In declaration order (or by name after sort_by_name()): the order listings show.
  const std::vector<Info>& list() const { return kinds_; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& k : kinds_) out.push_back(k.name);
    return out;
  }

 protected:
  /// Lists the kinds declared so far by name, for a registry whose kinds come from several
  /// files and whose listings are alphabetical (codecs).
  void sort_by_name() {
    std::sort(kinds_.begin(), kinds_.end(),
              [](const Info& a, const Info& b) { return a.name < b.name; });
  }

 private:
  std::vector<Info> kinds_;
};

/// The process's one `Registry`, made by its (private) constructor, which adds the built-in
/// kinds, the first time anything asks for it. A registry derives from this once, naming
/// itself, and befriends it: `friend class BuiltinKinds<FooRegistry>;`.
template <typename Registry>
class BuiltinKinds {
 public:
  /// Every declared kind.
  static const Registry& builtin() { return extend(); }
  /// The same registry, for a test that declares a kind of its own before anything reads it
  /// (and remove()s it when done).
  static Registry& extend() {
    static Registry registry;  // thread-safe one-time initialisation
    return registry;
  }
};

/// Refuses every key of `fields` that neither `common` nor `kind` declares. A key another kind
/// declares says which kinds take it ("expected only with topology.kind \"leader\""), so a
/// key that would be silently ignored is an error naming the fix.
template <typename Info>
void allow_kind_keys(const JsonFields& fields, const KindRegistry<Info>& registry,
                     const Info& kind, const std::vector<std::string>& common,
                     const std::string& selector_path) {
  std::vector<std::string> allowed = common;
  for (const auto& p : kind.params) allowed.push_back(p.name);
  for (const auto& item : fields.object().items()) {
    const std::string& key = item.key();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string takers;
    for (const auto& other : registry.list()) {
      for (const auto& p : other.params) {
        if (p.name == key) takers += (takers.empty() ? "\"" : " or \"") + other.name + "\"";
      }
    }
    if (!takers.empty()) {
      throw ConfigError(fields.path_of(key), "expected only with " + selector_path + " " + takers);
    }
  }
  fields.allow(allowed);
}

}  // namespace gradwire
