// One name per value of an enum, in the enum's order: a single table gives the name of a value,
// the value of a name and the list of names, so a vocabulary is written down once.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace zfetch::base {

/// The names of the values of `decltype(kLast)`, an enum numbered 0, 1, ... up to `kLast`. The
/// constructor takes exactly one name per value, so adding a value without a name does not
/// compile.
template <auto kLast>
class EnumNames {
 public:
  using Enum = decltype(kLast);
  static constexpr std::size_t kCount = static_cast<std::size_t>(kLast) + 1;

  template <typename... Names>
  requires(sizeof...(Names) == kCount) constexpr explicit EnumNames(Names... names)
      : names_{std::string_view(names)...} {}

  [[nodiscard]] constexpr std::string_view operator[](Enum value) const {
    return names_[static_cast<std::size_t>(value)];
  }

  /// The value named `name`; nullopt for a name that is not in the table.
  [[nodiscard]] constexpr std::optional<Enum> find(std::string_view name) const {
    for (std::size_t i = 0; i < kCount; ++i) {
      if (names_[i] == name) {
        return static_cast<Enum>(i);
      }
    }
    return std::nullopt;
  }

  /// Every name, in enum order (for "valid values are" lists and did-you-mean).
  [[nodiscard]] constexpr std::span<const std::string_view> names() const { return names_; }

 private:
  std::array<std::string_view, kCount> names_;
};

}  // namespace zfetch::base
