// ferry::Error: what went wrong, as a closed code plus errno, a message and a context chain.
//
// An Error is cheap to move (one pointer). The message and the context chain are built only
// on the failure path. The context chain reads outermost first, as in
//   "file nano.root > key Events > TTree > branch Jet_pt > basket 3: bad LZ4 checksum".
// Thread-safety: an Error is a value; distinct objects may be used from distinct threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ferry {

// Where an Error was made. std::source_location is not usable with clang 14 + libstdc++ 12
// (the fuzz preset), so this uses the builtins both compilers provide.
struct SourceLocation {
  const char* file = "";
  unsigned line = 0;
  const char* function = "";

  static constexpr SourceLocation Current(const char* file = __builtin_FILE(),
                                          unsigned line = __builtin_LINE(),
                                          const char* function = __builtin_FUNCTION()) {
    return {file, line, function};
  }
};

// Stable set of failure classes. Callers branch on the code, never on the message.
enum class ErrorCode : unsigned char {
  kIo,               // an operating-system I/O call failed (errno is set)
  kCorruption,       // bytes do not have the expected structure or checksum
  kNotFound,         // a named object, key, branch or event does not exist
  kInvalidArgument,  // the caller asked for something impossible (bad range, bad option)
  kUnsupported,      // a valid input that this version does not handle
  kTimeout,          // a bounded wait ran out
  kRemote,           // a remote peer (origin server) returned an error
  kShortRead,        // fewer bytes than requested exist at the given offset
  kNoSpace,          // a disk or a budget is full
  kCancelled,        // the operation was stopped on request
  kPermission,       // authentication or authorisation refused
};

std::string_view ErrorCodeName(ErrorCode code);

class [[nodiscard]] Error {
 public:
  Error(ErrorCode code,
        std::string message,
        int sys_errno = 0,
        SourceLocation where = SourceLocation::Current());
  Error(const Error& other);
  Error& operator=(const Error& other);
  Error(Error&&) noexcept = default;
  Error& operator=(Error&&) noexcept = default;
  ~Error();

  ErrorCode code() const { return rep_->code; }
  int sys_errno() const { return rep_->sys_errno; }
  const std::string& message() const { return rep_->message; }
  // Outermost context first.
  const std::vector<std::string>& context() const { return rep_->context; }
  const SourceLocation& where() const { return rep_->where; }

  // Adds an outer context element ("branch Jet_pt"). Returns *this for chaining.
  Error& AddContext(std::string outer) &;
  Error&& AddContext(std::string outer) &&;

  // "ctx1 > ctx2: message (strerror)".
  std::string ToString() const;

 private:
  struct Rep {
    ErrorCode code;
    int sys_errno;
    std::string message;
    std::vector<std::string> context;
    SourceLocation where;
  };
  std::unique_ptr<Rep> rep_;
};

// Shorthand constructors for the common codes.
Error IoError(std::string message, int sys_errno, SourceLocation where = SourceLocation::Current());
Error CorruptionError(std::string message, SourceLocation where = SourceLocation::Current());
Error InvalidArgumentError(std::string message, SourceLocation where = SourceLocation::Current());
Error NotFoundError(std::string message, SourceLocation where = SourceLocation::Current());
Error UnsupportedError(std::string message, SourceLocation where = SourceLocation::Current());

// The text for an errno value ("No such file or directory"). Thread-safe, unlike
// std::strerror, whose buffer another thread's call may overwrite.
std::string ErrnoText(int sys_errno);

}  // namespace ferry
