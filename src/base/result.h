// ferry::Result<T>: a value or an Error, with the std::expected subset ferry uses
// (has_value, value, error, operator*, operator->), so it can become an alias of
// std::expected<T, Error> once the project moves to C++23.
//
// Result<void> (alias Status) carries only success or an Error.
//
// FERRY_TRY(expr): evaluates a Result; on error returns the error from the enclosing function,
// otherwise yields the value (GNU statement expression, supported by gcc and clang).
// FERRY_TRY_CTX(expr, context): the same, adding an outer context string that is built only on
// the failure path.
#pragma once

#include <cassert>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>

#include "base/error.h"

namespace ferry {

template <class T>
class [[nodiscard]] Result {
 public:
  using value_type = T;

  Result(const T& value) : v_(std::in_place_index<0>, value) {}        // NOLINT: implicit by design
  Result(T&& value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT
  // NOLINTBEGIN(bugprone-forwarding-reference-overload): the requires-clause excludes Result
  // itself, so copy and move still win; clang-tidy 14 only understands enable_if.
  template <class U>
  requires(
      std::is_constructible_v<
          T,
          U&&> && !std::is_same_v<std::decay_t<U>, T> && !std::is_same_v<std::decay_t<U>, Error> && !std::is_same_v<std::decay_t<U>, Result>)
      Result(U&& value)
      : v_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT: implicit by design
  // NOLINTEND(bugprone-forwarding-reference-overload)

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  Error& error() & {
    assert(!has_value());
    return std::get<1>(v_);
  }
  const Error& error() const& {
    assert(!has_value());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!has_value());
    return std::get<1>(std::move(v_));
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  using value_type = void;

  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit by design

  bool has_value() const { return !error_.has_value(); }
  explicit operator bool() const { return has_value(); }
  void value() const { assert(has_value()); }
  Error& error() & { return *error_; }
  const Error& error() const& { return *error_; }
  Error&& error() && { return std::move(*error_); }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

inline Status OkStatus() {
  return {};
}

}  // namespace ferry

#define FERRY_CONCAT_INNER_(a, b) a##b
#define FERRY_CONCAT_(a, b) FERRY_CONCAT_INNER_(a, b)

// var is always a fresh identifier (FERRY_CONCAT_) that the macro declares and then names:
// parentheses around it would guard nothing.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define FERRY_TRY(expr) FERRY_TRY_IMPL_(expr, FERRY_CONCAT_(ferry_try_r_, __COUNTER__))
#define FERRY_TRY_IMPL_(expr, var)   \
  __extension__({                    \
    auto&& var = (expr);             \
    if (!var.has_value()) {          \
      return std::move(var).error(); \
    }                                \
    std::move(var).value();          \
  })

#define FERRY_TRY_CTX(expr, context) \
  FERRY_TRY_CTX_IMPL_(expr, context, FERRY_CONCAT_(ferry_try_r_, __COUNTER__))
#define FERRY_TRY_CTX_IMPL_(expr, context, var)            \
  __extension__({                                          \
    auto&& var = (expr);                                   \
    if (!var.has_value()) {                                \
      return std::move(var).error().AddContext((context)); \
    }                                                      \
    std::move(var).value();                                \
  })
// NOLINTEND(bugprone-macro-parentheses)
