// Status and StatusOr<T>: the result of an operation that can fail on bad input.
// A Status is OK or carries a message that says what is wrong and where
// ("pipeline 'x', stage 'conv1': ..."). Errors are values, not exceptions: every
// parser and validator of the project returns one.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace schedfarm {

class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !message_.has_value(); }
  // REQUIRES: !ok()
  const std::string& message() const { return *message_; }
  std::string ToString() const { return ok() ? "OK" : *message_; }

  // Returns a copy whose message is prefixed with `context + ": "`.
  Status WithContext(const std::string& context) const {
    return ok() ? *this : Status(context + ": " + *message_);
  }

 private:
  explicit Status(std::string message) : message_(std::move(message)) {}
  std::optional<std::string> message_;
};

// A value or an error Status.
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {}  // NOLINT: REQUIRES !status.ok()

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // REQUIRES: ok()
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace schedfarm

// Returns early from the enclosing function when `expr` (a Status) is an error.
#define SCHEDFARM_RETURN_IF_ERROR(expr)        \
  do {                                         \
    ::schedfarm::Status _status = (expr);      \
    if (!_status.ok()) return _status;         \
  } while (0)

#define SCHEDFARM_CONCAT_INNER(a, b) a##b
#define SCHEDFARM_CONCAT(a, b) SCHEDFARM_CONCAT_INNER(a, b)

// Assigns the value of a StatusOr expression to `lhs`, or returns its error.
#define SCHEDFARM_ASSIGN_OR_RETURN(lhs, expr)                                   \
  auto SCHEDFARM_CONCAT(_statusor_, __LINE__) = (expr);                         \
  if (!SCHEDFARM_CONCAT(_statusor_, __LINE__).ok())                             \
    return SCHEDFARM_CONCAT(_statusor_, __LINE__).status();                     \
  lhs = std::move(SCHEDFARM_CONCAT(_statusor_, __LINE__)).value()
