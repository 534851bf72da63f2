#include "base/error.h"

#include <cstring>
#include <utility>

namespace ferry {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kIo:
      return "io";
    case ErrorCode::kCorruption:
      return "corruption";
    case ErrorCode::kNotFound:
      return "not-found";
    case ErrorCode::kInvalidArgument:
      return "invalid-argument";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kTimeout:
      return "timeout";
    case ErrorCode::kRemote:
      return "remote";
    case ErrorCode::kShortRead:
      return "short-read";
    case ErrorCode::kNoSpace:
      return "no-space";
    case ErrorCode::kCancelled:
      return "cancelled";
    case ErrorCode::kPermission:
      return "permission";
  }
  return "unknown";
}

Error::Error(ErrorCode code, std::string message, int sys_errno, SourceLocation where)
    : rep_(std::make_unique<Rep>(Rep{code, sys_errno, std::move(message), {}, where})) {}

Error::Error(const Error& other) : rep_(std::make_unique<Rep>(*other.rep_)) {}

Error& Error::operator=(const Error& other) {
  if (this != &other) {
    rep_ = std::make_unique<Rep>(*other.rep_);
  }
  return *this;
}

Error::~Error() = default;

Error& Error::AddContext(std::string outer) & {
  rep_->context.insert(rep_->context.begin(), std::move(outer));
  return *this;
}

Error&& Error::AddContext(std::string outer) && {
  rep_->context.insert(rep_->context.begin(), std::move(outer));
  return std::move(*this);
}

std::string Error::ToString() const {
  std::string out;
  for (const std::string& c : rep_->context) {
    out += c;
    out += " > ";
  }
  if (!out.empty()) {
    out.resize(out.size() - 3);
    out += ": ";
  }
  out += rep_->message;
  if (rep_->sys_errno != 0) {
    out += " (";
    out += ErrnoText(rep_->sys_errno);
    out += ")";
  }
  return out;
}

std::string ErrnoText(int sys_errno) {
  char buf[128];
  // GNU strerror_r returns the message pointer (may not use buf).
  return strerror_r(sys_errno, buf, sizeof buf);
}

Error IoError(std::string message, int sys_errno, SourceLocation where) {
  return {ErrorCode::kIo, std::move(message), sys_errno, where};
}
Error CorruptionError(std::string message, SourceLocation where) {
  return {ErrorCode::kCorruption, std::move(message), 0, where};
}
Error InvalidArgumentError(std::string message, SourceLocation where) {
  return {ErrorCode::kInvalidArgument, std::move(message), 0, where};
}
Error NotFoundError(std::string message, SourceLocation where) {
  return {ErrorCode::kNotFound, std::move(message), 0, where};
}
Error UnsupportedError(std::string message, SourceLocation where) {
  return {ErrorCode::kUnsupported, std::move(message), 0, where};
}

}  // namespace ferry
